package daemon

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/limits"
)

// CheckOptions say how Check checks.
type CheckOptions struct {
	// CreateMissing creates the missing slim, retry and dead-letter topics.
	CreateMissing bool
	// Sample is how many of the last records of each source partition the
	// offload step's if: is tried on (0: none).
	Sample int
	// KafkaTimeout is how long Kafka has to answer; each store has the
	// pipeline's errors.store_budget.
	KafkaTimeout time.Duration
	// BootstrapFrom says where the bootstrap servers were set, for the fix
	// when no broker answers ("": the pipeline file's kafka.bootstrap_servers).
	BootstrapFrom string
	// Progress hears what Check waits on (nil: nothing).
	Progress func(format string, args ...any)
	Log      *zap.Logger
}

// CheckReport is what Check found, as offloader check --output json prints
// it (its shape: docs/schemas/check.json).
type CheckReport struct {
	// OK: every limit fits, Kafka answered, every store works, and no
	// sampled record is bound for the dead-letter topic.
	OK     bool         `json:"ok"`
	Kafka  CheckKafka   `json:"kafka"`
	Sample *CheckSample `json:"sample,omitempty"`
	Stores StoreChecks  `json:"stores"`
}

// CheckKafka is what check read from the cluster.
type CheckKafka struct {
	Bootstrap string `json:"bootstrap_servers"`
	// Reached: the cluster answered; else Error says how it failed, and Fix
	// what to change when no broker answered.
	Reached bool `json:"reached"`
	// ClusterID is the cluster's id, part of every payload's key.
	ClusterID string           `json:"cluster_id,omitempty"`
	Error     string           `json:"error,omitempty"`
	Fix       string           `json:"fix,omitempty"`
	Created   []string         `json:"created_topics"`
	Limits    []CheckRow       `json:"limits"`
	Problems  []limits.Problem `json:"problems"`
}

// CheckRow is a line of the limit table.
type CheckRow struct {
	Topic   string `json:"topic"`
	Role    string `json:"role"`
	Gate    string `json:"gate"`
	Limit   int    `json:"limit"`
	Largest int    `json:"largest_record"`
	OK      bool   `json:"ok"`
}

// CheckSample is the offload step's if: tried on the last records of each
// source partition (only when the step has an if:).
type CheckSample struct {
	PerPartition int              `json:"per_partition"`
	Records      int64            `json:"records"`
	Problems     []limits.Problem `json:"problems"`
	Error        string           `json:"error,omitempty"`
}

// StoreChecks is each store's checks and problems.
type StoreChecks struct {
	Checks   []StoreCheck     `json:"checks"`
	Problems []limits.Problem `json:"problems"`
}

// Check checks p's topics and limits on Kafka (within o.KafkaTimeout), tries
// the offload step's if: on samples, and probes each store (within its own
// budget), one after the other, each with its own time: a Kafka that does
// not answer leaves the stores their time, and is named as the cause.
func Check(ctx context.Context, p *config.Pipeline, o CheckOptions) *CheckReport {
	logger, progress := orNop(o.Log), o.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	kafkaTimeout := o.KafkaTimeout
	rep := &CheckReport{Kafka: CheckKafka{Bootstrap: p.Kafka.BootstrapServers, Created: []string{}, Limits: []CheckRow{}, Problems: []limits.Problem{}}}
	progress("checking Kafka at %s (up to %s)", p.Kafka.BootstrapServers, kafkaTimeout)
	kctx, cancel := context.WithTimeout(ctx, kafkaTimeout)
	figures, err := Survey(kctx, p, logger)
	if err == nil {
		rep.Kafka.ClusterID, err = kadmin.ClusterID(kctx, KafkaClient(p), logger)
	}
	if err == nil && o.CreateMissing {
		figures, rep.Kafka.Created, err = CreateMissing(kctx, p, figures, logger)
	}
	cancel()
	if err != nil {
		rep.Kafka.Error = err.Error()
		if kctx.Err() != nil || figures == nil {
			rep.Kafka.Fix = bootstrapFix(p, kafkaTimeout, o.BootstrapFrom)
		}
	} else {
		rep.Kafka.Reached = true
		rows, problems := limits.Check(figures)
		for _, r := range rows {
			rep.Kafka.Limits = append(rep.Kafka.Limits, CheckRow{Topic: r.Topic, Role: r.Role, Gate: r.Gate, Limit: r.Limit, Largest: r.Largest, OK: r.OK})
		}
		rep.Kafka.Problems = append(rep.Kafka.Problems, problems...)
		if len(problems) == 0 && o.Sample > 0 {
			sctx, cancel := context.WithTimeout(ctx, kafkaTimeout*time.Duration(len(p.Source.Topics)))
			read, problems, err := SampleOffloadIf(sctx, p, o.Sample)
			cancel()
			if read >= 0 || err != nil {
				rep.Sample = &CheckSample{PerPartition: o.Sample, Records: max(read, 0), Problems: problems}
				if err != nil {
					rep.Sample.Error = err.Error()
				}
			}
		}
	}
	for name, spec := range p.Stores {
		progress("checking store %s (%s, up to %s)", name, spec.Type, p.Errors.StoreBudget)
	}
	rows, problems := CheckStores(ctx, p, rep.Kafka.ClusterID)
	rep.Stores = StoreChecks{Checks: rows, Problems: problems}
	if rep.Stores.Checks == nil {
		rep.Stores.Checks = []StoreCheck{}
	}
	if rep.Stores.Problems == nil {
		rep.Stores.Problems = []limits.Problem{}
	}
	rep.OK = rep.Kafka.Reached && len(rep.Kafka.Problems) == 0 && len(rep.Stores.Problems) == 0 &&
		(rep.Sample == nil || rep.Sample.Error == "" && len(rep.Sample.Problems) == 0)
	return rep
}

// bootstrapFix says what to change when Kafka did not answer: the setting
// (from: where it was set; default kafka.bootstrap_servers in the pipeline
// file) and the reachability of the brokers.
func bootstrapFix(p *config.Pipeline, timeout time.Duration, from string) string {
	if from == "" {
		from = "kafka.bootstrap_servers in the pipeline file"
	}
	return fmt.Sprintf("no broker at %s answered within %s: check %s, that the brokers are up and reachable from here (kafka-broker-api-versions.sh --bootstrap-server %s), and kafka.consumer's security settings (security.protocol, sasl.*)",
		p.Kafka.BootstrapServers, timeout, from, p.Kafka.BootstrapServers)
}
