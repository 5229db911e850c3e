package daemon

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/internal/kafka/reader"
	"github.com/offloader/offloader/limits"
	"github.com/offloader/offloader/migration"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/transforms"
)

// AnalyzeOptions say what Analyze reads, and at which threshold.
type AnalyzeOptions struct {
	Topic      string
	Partitions []int32 // nil: every partition
	From       reader.Start
	// To is where each partition's reading stops: an offset (To.Offset) or
	// the first record at or after a time (To.Time). nil: its end now.
	To *reader.Start
	// Threshold is the offload threshold in bytes. 0: the pipeline's offload
	// step's, or auto when the step has none or says auto.
	Threshold int
	// Auto derives the threshold from the limits, whatever the step says.
	Auto bool
	Top  int // how many of the largest records to list
	Log  *zap.Logger
}

// Analysis is analyze's output: what was read, and the figures.
type Analysis struct {
	Topic     string  `json:"topic"`
	Threshold string  `json:"threshold_source"`
	Elapsed   float64 `json:"seconds"`
	migration.Report
}

// Analyze reads o.Topic on p's cluster (read_committed, joining no group)
// and reports what offloading at the threshold would do to it, and which of
// its records break a size gate today.
func Analyze(ctx context.Context, p *config.Pipeline, o AnalyzeOptions) (Analysis, error) {
	surveyCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	one := *p
	one.Source.Topics = []string{o.Topic}
	f, err := Survey(surveyCtx, &one, o.Log)
	if err != nil {
		return Analysis{}, err
	}
	src := f.Sources[0]
	if !src.Exists {
		return Analysis{}, fmt.Errorf("topic %s does not exist on %s", o.Topic, p.Kafka.BootstrapServers)
	}
	threshold, why := analysisThreshold(p, f, o)
	fetchMax, _ := strconv.Atoi(p.Kafka.Consumer["fetch.max.bytes"])
	gates := migration.SourceGates(f, src, fetchMax)
	until, err := analysisEnd(ctx, p, o, src.Partitions)
	if err != nil {
		return Analysis{}, err
	}
	store := "payloads"
	if names := slices.Sorted(maps.Keys(p.Stores)); len(names) > 0 {
		store = names[0]
	}
	a := migration.NewAnalysis(threshold, store, gates, o.Top)
	applies, err := transforms.OffloadApplies(Steps(p))
	if err != nil {
		return Analysis{}, err
	}
	a.Gate(applies, migration.SlimLimitOf(f))
	started := time.Now()
	r, err := reader.OpenReader(reader.ReaderOptions{Bootstrap: p.Kafka.BootstrapServers, Properties: p.Kafka.Consumer,
		Topic: o.Topic, Partitions: o.Partitions, From: o.From, Until: until})
	if err != nil {
		return Analysis{}, err
	}
	defer r.Close()
	if err := a.ReadAll(ctx, r, reader.ErrEnd); err != nil {
		return Analysis{}, fmt.Errorf("reading %s: %w", o.Topic, err)
	}
	return Analysis{Topic: o.Topic, Threshold: why, Elapsed: time.Since(started).Seconds(), Report: a.Report()}, nil
}

// analysisThreshold is the threshold to analyze at and where it comes from.
func analysisThreshold(p *config.Pipeline, f *limits.Figures, o AnalyzeOptions) (int, string) {
	if o.Threshold > 0 {
		return o.Threshold, "--threshold " + settings.Size(o.Threshold).String()
	}
	if th, ok := transforms.OffloadThreshold(Steps(p)); ok && !th.IsAuto() && !o.Auto {
		return int(th), "the pipeline's offload step: " + settings.Size(th).String()
	}
	if f.Slim.Exists {
		// The limit run derives auto from, whatever the pipeline's own step says.
		limit := f.SlimLimit()
		return transforms.AutoThreshold(limit.Bytes), fmt.Sprintf("auto: %s less %s", limit.Gate, transforms.AutoThresholdHeadroom)
	}
	limit := f.ProducerMaxMessageBytes
	if f.BrokerMessageMaxBytes > 0 {
		limit = min(limit, f.BrokerMessageMaxBytes)
	}
	return transforms.AutoThreshold(limit), fmt.Sprintf("auto: the producer's message.max.bytes and the broker's message.max.bytes (%d) less %s", limit, transforms.AutoThresholdHeadroom)
}

// analysisEnd is where each partition's reading stops (nil: at its end).
func analysisEnd(ctx context.Context, p *config.Pipeline, o AnalyzeOptions, partitions int) (map[int32]int64, error) {
	switch {
	case o.To == nil:
		return nil, nil
	case !o.To.Time.IsZero():
		g, err := kadmin.OpenGroups(KafkaClient(p), orNop(o.Log))
		if err != nil {
			return nil, err
		}
		defer g.Close()
		return g.OffsetsAt(ctx, o.Topic, partitions, o.To.Time)
	}
	until := map[int32]int64{}
	for part := range int32(partitions) {
		until[part] = o.To.Offset
	}
	return until, nil
}

// SampleOffloadIf tries the offload step's if: on the last n records of each
// of p's source partitions. A record over the slim topic's limit that the
// if: passes by would go to the dead-letter topic: each source topic that has
// such records is a problem. read is the number of records tried, -1 when
// the step has no if: (nothing was read).
func SampleOffloadIf(ctx context.Context, p *config.Pipeline, n int) (read int64, problems []limits.Problem, err error) {
	applies, err := transforms.OffloadApplies(Steps(p))
	if err != nil {
		return 0, nil, err
	}
	if applies == nil {
		return -1, nil, nil
	}
	for _, topic := range p.Source.Topics {
		rep, err := Analyze(ctx, p, AnalyzeOptions{Topic: topic, From: reader.Start{Tail: int64(n)}})
		if err != nil {
			return read, problems, fmt.Errorf("sampling %s for the offload step's if: %w", topic, err)
		}
		read += rep.Records
		if o := rep.Offload; o.DeadLettered > 0 {
			problems = append(problems, limits.Problem{
				What: fmt.Sprintf("%d of the %d records sampled from %s (the last %d of each partition) are over the slim topic's limit and the offload step's if: passes them by: run sends them to the dead-letter topic (%s)",
					o.DeadLettered, rep.Records, topic, n, strings.Join(o.DeadLetteredExamples, ", ")),
				Fix: "make the offload step's if: take every record over its threshold (or remove the if:), or raise the slim topic's max.message.bytes and the producer's message.max.bytes above these records",
			})
		}
	}
	return read, problems, nil
}
