package daemon

import (
	"context"
	"io"

	"github.com/offloader/offloader/cat"
	"github.com/offloader/offloader/internal/kafka/reader"
	"github.com/offloader/offloader/resolver"
)

// CatOptions say which records Cat reads and how it lists them.
type CatOptions struct {
	Bootstrap string
	// Properties are librdkafka consumer properties (security, fetch
	// sizes); none of those a Reader sets itself.
	Properties map[string]string
	Topic      string
	Partitions []int32 // nil: every partition
	From       reader.Start
	// Follow, StopAtEnd and Uncommitted are reader.ReaderOptions'.
	Follow, StopAtEnd, Uncommitted bool
	// List shapes the listing; Cat sets its Topic and End.
	List cat.Options
}

// Cat lists o.Topic's records (cat.Print) as a Reader reads them from the
// cluster, resolved through res (nil: as stored).
func Cat(ctx context.Context, res *resolver.Resolver, o CatOptions, errOut io.Writer) error {
	r, err := reader.OpenReader(reader.ReaderOptions{Bootstrap: o.Bootstrap, Properties: o.Properties, Topic: o.Topic,
		Partitions: o.Partitions, From: o.From, Follow: o.Follow, StopAtEnd: o.StopAtEnd, Uncommitted: o.Uncommitted})
	if err != nil {
		return err
	}
	defer r.Close()
	o.List.Topic, o.List.End = o.Topic, reader.ErrEnd
	return cat.Print(ctx, r, res, o.List, errOut)
}
