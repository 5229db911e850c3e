package daemon

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/gc"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/internal/kafka/reader"
)

// CollectOptions say how Collect collects.
type CollectOptions struct {
	// Grace is how old a payload must be before it may be deleted.
	Grace time.Duration
	// DryRun reports what would be deleted and deletes nothing.
	DryRun bool
	// Progress hears what the collection is doing (nil: nothing).
	Progress func(format string, args ...any)
	Log      *zap.Logger
}

// Collect runs gc.Collect over p's key prefixes: it proves which payloads no
// record of p's topics can still name, reading the topics and p's group on
// the cluster, and deletes those from p's stores. A pipeline that writes to
// no store (p.KeyPrefixes is empty) has nothing to collect; Collect reports
// that as an empty report.
func Collect(ctx context.Context, p *config.Pipeline, o CollectOptions) (*gc.Report, error) {
	prefixes := p.KeyPrefixes()
	if len(prefixes) == 0 {
		return &gc.Report{}, nil
	}
	groups, err := kadmin.OpenGroups(KafkaClient(p), orNop(o.Log))
	if err != nil {
		return nil, err
	}
	defer groups.Close()
	open, err := p.OpenStores(ctx)
	if err != nil {
		return nil, fmt.Errorf("nothing was deleted: %w", err)
	}
	defer func() {
		for _, s := range open {
			s.Close()
		}
	}()
	var retries []string
	for _, r := range p.Errors.RetryTopics {
		retries = append(retries, r.Topic)
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	cluster, err := groups.ClusterID(ctx)
	if err != nil {
		return nil, fmt.Errorf("nothing was deleted: %w", err)
	}
	plan := gc.Plan{Writer: p.Writer(), Cluster: cluster, Places: p.StorePlaces(), Group: p.Source.Group, SourceTopics: p.Source.Topics, SlimTopic: p.SlimTopic,
		RetryTopics: retries, DeadLetterTopic: p.Errors.DeadLetterTopic, Prefixes: prefixes,
		Grace: o.Grace, Floor: p.GCFloor(), DryRun: o.DryRun, Now: time.Now, Progress: progress}
	return gc.Collect(ctx, plan, reader.NewTopicLog(groups, p.Kafka.BootstrapServers, p.Kafka.Consumer), open)
}
