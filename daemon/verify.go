package daemon

import (
	"context"

	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/migration"
	"github.com/offloader/offloader/resolver"
)

// Verify checks the parity of what p's group committed (migration.Verify) on
// p's cluster. deep downloads every payload from p's stores and checks its
// SHA-256; otherwise pointers are checked by their sha256 field and no store
// is read. It returns the results per source partition and how many slim
// records name no source record.
func Verify(ctx context.Context, p *config.Pipeline, deep bool, log *zap.Logger) ([]migration.Result, int, error) {
	cluster, closeCluster, err := Cluster(p, log)
	if err != nil {
		return nil, 0, err
	}
	defer closeCluster()
	var res *resolver.Resolver
	if deep {
		open, err := p.OpenStores(ctx)
		if err != nil {
			return nil, 0, err
		}
		res = resolver.New(resolver.Options{Stores: open, MaxSize: 1 << 30})
		defer res.Close()
	} else {
		res = resolver.New(resolver.Options{}) // inline codecs only: no store is read
	}
	o := migration.VerifyOptions{Group: p.Source.Group, SourceTopics: p.Source.Topics, SlimTopic: p.SlimTopic,
		DeadLetterTopic: p.Errors.DeadLetterTopic, Latest: p.Source.Start() == config.StartLatest, Deep: deep,
		Original: migration.OriginalSHA(res)}
	if t, ok := p.Source.StartTime(); ok {
		o.StartTime = t
	}
	return migration.Verify(ctx, cluster, o)
}
