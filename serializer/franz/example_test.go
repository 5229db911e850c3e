package franz_test

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/serializer"
	"github.com/offloader/offloader/serializer/franz"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

// A franz-go producer stores a 2 MiB value and produces its pointer; a
// consumer reads it back with the resolver. (kfake is an in-process broker:
// give kgo.SeedBrokers your cluster's addresses instead.)
func Example() {
	cluster, _ := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders.slim"))
	defer cluster.Close()
	root, _ := os.MkdirTemp("", "payloads")
	defer os.RemoveAll(root)
	store, _ := filesystem.Open("payloads", filesystem.Config{Root: root, DirMode: 0o750, FileMode: 0o640})

	s, err := serializer.New(serializer.Config{Store: store, StoreName: "payloads", Threshold: 256 << 10, Prefix: "orders-svc"})
	if err != nil {
		panic(err)
	}
	cl, _ := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("orders.slim"))
	defer cl.Close()
	if err := franz.CheckClient(s, cl); err != nil {
		panic(err)
	}
	value := bytes.Repeat([]byte("2 MiB of order document "), 2<<20/24)
	ctx := context.Background()
	if err := franz.ProduceSync(ctx, s, cl, &kgo.Record{Topic: "orders.slim", Key: []byte("order-1"), Value: value}).FirstErr(); err != nil {
		panic(err)
	}

	r := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": store}})
	rec := cl.PollFetches(ctx).Records()[0]
	headers := make([]pipeline.Header, len(rec.Headers))
	for i, h := range rec.Headers {
		headers[i] = pipeline.Header{Key: h.Key, Value: h.Value}
	}
	got, err := r.Resolve(ctx, rec.Value, (&pipeline.Record{Headers: headers}).Header)
	if err != nil {
		panic(err)
	}
	fmt.Printf("a %d-byte value went as a pointer of under 1 KiB: %v; resolved %d bytes, equal: %v\n", len(value), len(rec.Value) < 1024, len(got.Value), bytes.Equal(got.Value, value))
	// Output: a 2097144-byte value went as a pointer of under 1 KiB: true; resolved 2097144 bytes, equal: true
}
