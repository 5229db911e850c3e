package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/gc"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/resolver/confluent"
	"github.com/offloader/offloader/serializer"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/httpstore"
	"github.com/offloader/offloader/stores/httpstore/httpstoretest"
)

// gcWorld is a pipeline's topics (raw, slim, dead-letter, one partition
// each) and a filesystem store, for gc to be tried against.
type gcWorld struct {
	raw, slim, dead, root, cfg string
	store                      stores.Store
	writer                     stores.Metadata
}

func newGCWorld(t *testing.T, name, consumer, extraStoreYAML string) *gcWorld {
	t.Helper()
	w := &gcWorld{raw: uniqueName(t, "raw"), slim: uniqueName(t, "slim"), dead: uniqueName(t, "dlt"), root: t.TempDir()}
	createTopic(t, w.raw, 1, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, w.slim, 1, nil)
	createTopic(t, w.dead, 1, nil)
	storeYAML := fmt.Sprintf("      payloads: {type: filesystem, root: %q%s}", w.root, extraStoreYAML)
	w.cfg = gcPipelineFile(t, name, w.raw, w.slim, uniqueName(t, "g"), storeYAML, consumer, "    errors: {dead_letter_topic: "+w.dead+", store_budget: 2s}")
	w.store = openFS(t, w.root)
	w.writer = stores.Metadata{stores.MetaWriter: name + "@" + w.slim, stores.MetaCluster: clusterID(t, bootstrap)}
	return w
}

// put stores an object of this pipeline's writer and returns a pointer to it.
func (w *gcWorld) put(t *testing.T, key string, value []byte) pointer.Pointer {
	t.Helper()
	if err := w.store.Put(context.Background(), key, value, w.writer); err != nil {
		t.Fatal(err)
	}
	return pointer.Pointer{Store: "payloads", Key: key, Size: int64(len(value)), SHA256: pointer.Digest(sha256.Sum256(value)), Codec: pointer.CodecNone, StoredSize: int64(len(value))}
}

func pointerMessage(topic string, p pointer.Pointer) *kafka.Message {
	return &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: p.Encode(),
		Headers: []kafka.Header{{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte("v1")}}}
}

// produceEach produces msgs, each in a record batch of its own.
func produceEach(t *testing.T, msgs []*kafka.Message) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "enable.idempotence": true, "linger.ms": 0, "batch.num.messages": 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	go func() {
		for range p.Events() {
		}
	}()
	for _, m := range msgs {
		if err := p.Produce(m, nil); err != nil {
			t.Fatal(err)
		}
	}
	if left := p.Flush(60000); left != 0 {
		t.Fatalf("%d records not delivered", left)
	}
}

// A log start that passes gc's reader (retention, or here DeleteRecords, as
// gc reads the oldest segment) stops gc before it deletes anything: it is
// never taken for the end. gc reads slowly here (one record a fetch, the
// next fetch after 20 ms) while the log start moves faster than it reads.
// Once the log start stands still, gc deletes the payloads of the pointers
// that left the log, and every pointer still on the topic resolves.
func TestGCStopsWhenTheLogStartPassesItsReader(t *testing.T) {
	t.Parallel() // its own topics and stores; runs beside the other parallel tests, after the serial ones
	w := newGCWorld(t, "gcreset", "{max.partition.fetch.bytes: 1, queued.min.messages: 1, fetch.queue.backoff.ms: 20}", "")
	const records, perObject = 3000, 30
	var msgs []*kafka.Message
	var ptrs []pointer.Pointer
	for i := range records / perObject {
		ptrs = append(ptrs, w.put(t, fmt.Sprintf("gcreset/%s/0/%d", w.raw, i), bytes.Repeat([]byte{byte(i)}, 1000+i)))
	}
	for i := range records {
		msgs = append(msgs, pointerMessage(w.slim, ptrs[i/perObject]))
	}
	produceEach(t, msgs)
	orphan := w.put(t, "gcreset/"+w.raw+"/0/999999", []byte("orphan"))
	backdate(t, w.root)

	admin := newAdmin(t)
	gcDone := make(chan struct{})
	var moved sync.WaitGroup
	moved.Add(1)
	go func() {
		// The log start moves 20 records every 100 ms (200 a second, four
		// times what gc reads) until gc stops or one record is left.
		defer moved.Done()
		for low := int64(20); low < records; low += 20 {
			select {
			case <-gcDone:
				return
			case <-time.After(100 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), scaled(10*time.Second))
			_, err := admin.DeleteRecords(ctx, []kafka.TopicPartition{{Topic: &w.slim, Partition: 0, Offset: kafka.Offset(low)}})
			cancel()
			if err != nil {
				t.Errorf("DeleteRecords before %d: %v", low, err)
				return
			}
		}
	}()
	code, rep, stderr := runGC(t, w.cfg, "--grace", gcGrace.String())
	close(gcDone)
	moved.Wait()
	if code != 1 || !strings.Contains(stderr, "an offset left the log while it was read") || !strings.Contains(stderr, "nothing was deleted") {
		t.Fatalf("gc while the log start passed its reader: exit %d, %s\nwant exit 1, the reset named, nothing deleted", code, stderr)
	}
	if len(rep.Sweeps) != 0 || countObjects(w.root) != records/perObject+1 {
		t.Errorf("gc swept %v and left %d objects, want nothing swept and all %d", rep.Sweeps, countObjects(w.root), records/perObject+1)
	}
	// The log start stands still now: gc reads what is left and deletes what
	// only the deleted records referenced.
	code, rep, stderr = runGC(t, w.cfg, "--grace", gcGrace.String())
	if code != 0 {
		t.Fatalf("gc: exit %d\n%s", code, stderr)
	}
	left := readToEnd(t, w.slim)
	first := left[0].TopicPartition.Offset
	if p := rep.Topics[0].Partitions[0]; p.From != int64(first) || p.To != records {
		t.Errorf("slim read %+v, want from %d to %d", p, first, records)
	}
	wantLeft := records/perObject - int(first)/perObject
	if got := countObjects(w.root); got != wantLeft || rep.Sweeps[0].Deleted.Objects != int64(int(first)/perObject+1) {
		t.Errorf("%d objects left, %d deleted; want %d left and the %d only deleted records referenced, and the orphan %s", got, rep.Sweeps[0].Deleted.Objects, wantLeft, int(first)/perObject, orphan.Key)
	}
	if n := assertAllResolve(t, w.store, w.slim); n != records-int(first) {
		t.Errorf("%d records resolved, want %d", n, records-int(first))
	}
}

// A transaction left open on the slim topic hides every record committed
// after it from a read_committed reader. gc reads past the last stable
// offset uncommitted and keeps what those records reference, says which
// partition it waits on, and deletes nothing they reference.
func TestGCKeepsWhatAnOpenTransactionHides(t *testing.T) {
	t.Parallel() // its own topics and stores; runs beside the other parallel tests, after the serial ones
	w := newGCWorld(t, "gcopen", "", "")
	transactional := func(id string) *kafka.Producer {
		p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "transactional.id": id, "transaction.timeout.ms": 60000})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		go func() {
			for range p.Events() {
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
		defer cancel()
		if err := p.InitTransactions(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hanging := transactional(uniqueName(t, "hanging"))
	if err := hanging.Produce(pointerMessage(w.slim, w.put(t, "gcopen/hanging", []byte("in the open transaction"))), nil); err != nil {
		t.Fatal(err)
	}
	hanging.Flush(10000)
	committer := transactional(uniqueName(t, "committer"))
	for i := range 50 {
		if err := committer.Produce(pointerMessage(w.slim, w.put(t, fmt.Sprintf("gcopen/committed/%d", i), []byte(fmt.Sprint("committed ", i)))), nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	if err := committer.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	w.put(t, "gcopen/orphan", []byte("orphan"))
	backdate(t, w.root)

	code, rep, stderr := runGC(t, w.cfg, "--grace", gcGrace.String())
	if code != 0 {
		t.Fatalf("gc: exit %d\n%s", code, stderr)
	}
	p := rep.Topics[0].Partitions[0]
	if !p.Open() || p.To != 0 || p.Stable != 0 || p.UncommittedPointers != 51 {
		t.Errorf("slim read %+v: want it open at 0, and 51 pointers read past it", p)
	}
	if s := rep.Sweeps[0]; s.Deleted.Objects != 1 || s.Deleted.Examples[0] != "gcopen/orphan" || s.Uncommitted.Objects != 51 {
		t.Errorf("sweep: deleted %+v, uncommitted %d; want the orphan deleted and 51 kept", s.Deleted, s.Uncommitted.Objects)
	}
	out, err := command(offloaderBinary(t), "gc", "-F", w.cfg, "--grace", gcGrace.String(), "--dry-run").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "waiting on a transaction open on "+w.slim+"[0] from offset 0 (high watermark 52)") ||
		!strings.Contains(string(out), "describe-producers --topic "+w.slim+" --partition 0") {
		t.Errorf("gc's summary does not name the open transaction (%v):\n%s", err, out)
	}
	if err := hanging.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if n := assertAllResolve(t, w.store, w.slim); n != 50 {
		t.Errorf("%d committed records resolved, want 50", n)
	}
}

// Two teams name their pipelines "orders", in two files, on one store with
// the default prefix: each one's gc keeps the other's payloads (its objects
// name another writer), and deletes its own once unreferenced.
func TestGCKeepsAnotherPipelinesPayloadsOfTheSameName(t *testing.T) {
	t.Parallel() // its own topics and stores; runs beside the other parallel tests, after the serial ones
	root := t.TempDir()
	storeYAML := fmt.Sprintf("      payloads: {type: filesystem, root: %q}", root)
	type team struct{ raw, slim, cfg string }
	var teams []team
	for range 2 {
		tm := team{raw: uniqueName(t, "raw"), slim: uniqueName(t, "slim")}
		createTopic(t, tm.raw, 1, map[string]string{"max.message.bytes": "8388608"})
		createTopic(t, tm.slim, 1, nil)
		tm.cfg = gcPipelineFile(t, "orders", tm.raw, tm.slim, uniqueName(t, "g"), storeYAML, "", "    errors: {store_budget: 2s}")
		var recs []sourceRecord
		for i := range 3 {
			recs = append(recs, sourceRecord{key: fmt.Appendf(nil, "%d", i), value: bytes.Repeat([]byte{byte(i)}, 100<<10)})
		}
		produceRecords(t, tm.raw, recs)
		if out, err := command(offloaderBinary(t), "run", "-F", tm.cfg, "--until-end").CombinedOutput(); err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		teams = append(teams, tm)
	}
	if n := countObjects(root); n != 6 {
		t.Fatalf("the store holds %d objects, want 3 of each team", n)
	}
	// Team a's slim records age out; its payloads are unreferenced.
	res, err := newAdmin(t).DeleteRecords(context.Background(), []kafka.TopicPartition{{Topic: &teams[0].slim, Partition: 0, Offset: kafka.OffsetEnd}})
	if err != nil || res.DeleteRecordsResults[0].TopicPartition.Error != nil {
		t.Fatalf("DeleteRecords: %v %v", err, res)
	}
	backdate(t, root)
	code, rep, stderr := runGC(t, teams[0].cfg, "--grace", gcGrace.String())
	if code != 0 {
		t.Fatalf("gc: exit %d\n%s", code, stderr)
	}
	if s := rep.Sweeps[0]; s.Deleted.Objects != 3 || s.OtherWriter.Objects != 3 {
		t.Errorf("team a's gc: deleted %d, other writer %d; want its own 3 deleted and team b's 3 kept", s.Deleted.Objects, s.OtherWriter.Objects)
	}
	if n := assertAllResolve(t, openFS(t, root), teams[1].slim); n != 3 {
		t.Errorf("team b: %d records resolve, want 3", n)
	}
}

// An HTTP store whose listing ignores ?prefix= hands gc every key of the
// server: gc keeps those outside the prefix it asked for, even under a
// prefix it adopted (where objects that name no writer are its own), and
// offloader check says the listing cannot be trusted.
func TestGCKeepsKeysAListingShouldNotHaveReturned(t *testing.T) {
	t.Parallel() // its own topics and stores; runs beside the other parallel tests, after the serial ones
	srv := httpstoretest.New(t, false, 0)
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, 1, nil)
	createTopic(t, slim, 1, nil)
	storeYAML := fmt.Sprintf("      payloads: {type: http, url: %q, auth_token: %s, try_timeout: 1s, gc_adopt: [producer]}", srv.URL, httpstoretest.Token)
	cfg := gcPipelineFile(t, "gclist", raw, slim, uniqueName(t, "g"), storeYAML, "", "    errors: {store_budget: 2s}")
	hcfg := httpstore.DefaultConfig()
	hcfg.URL, hcfg.AuthToken = srv.URL, httpstoretest.Token
	store, err := httpstore.Open("payloads", hcfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, key := range []string{"producer/sha256/unreferenced", "producers-eu/theirs", "team-b/theirs"} {
		if err := store.Put(ctx, key, []byte(key), nil); err != nil {
			t.Fatal(err)
		}
	}
	srv.IgnoreListPrefix()
	pastGrace()
	code, rep, stderr := runGC(t, cfg, "--grace", gcGrace.String())
	if code != 0 {
		t.Fatalf("gc: exit %d\n%s", code, stderr)
	}
	var adopted gc.Sweep
	for _, s := range rep.Sweeps {
		if s.Prefix == "producer" {
			adopted = s
		}
	}
	if adopted.Deleted.Objects != 1 || adopted.Outside.Objects < 2 {
		t.Errorf("under the adopted prefix: deleted %+v, outside %+v; want its 1 deleted and the other team's kept", adopted.Deleted, adopted.Outside)
	}
	for _, key := range []string{"producers-eu/theirs", "team-b/theirs"} {
		if _, err := store.Get(ctx, key, 100); err != nil {
			t.Errorf("%s: %v, want it kept", key, err)
		}
	}
	out, err := command(offloaderBinary(t), "check", "-F", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the listing returned a key outside the prefix asked for") {
		t.Errorf("check passed a listing that ignores its prefix (%v):\n%s", err, out)
	}
}

// A raw record that carries the pointer headers but is no pointer (its
// value is not JSON, or it names a store the pipeline does not have) goes
// to the dead-letter topic as malformed_pointer, its marker headers
// renamed: nothing reaches the slim or dead-letter topic marked as a
// pointer without being one, and gc keeps working afterwards.
func TestMalformedPointersAreDeadLettered(t *testing.T) {
	t.Parallel() // its own topics and stores; runs beside the other parallel tests, after the serial ones
	w := newGCWorld(t, "gcmalformed", "", "")
	marked := []kafka.Header{{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte("v1")}}
	forged := pointer.Pointer{Store: "elsewhere", Key: "x", Size: 1, SHA256: strings.Repeat("0", 64), Codec: pointer.CodecNone, StoredSize: 1}
	produceRecords(t, w.raw, []sourceRecord{
		{key: []byte("0"), value: []byte("fine")},
		{key: []byte("1"), value: []byte("{not json"), headers: marked},
		{key: []byte("2"), value: forged.Encode(), headers: marked},
		{key: []byte("3"), value: bytes.Repeat([]byte("b"), 100<<10)},
	})
	if out, err := command(offloaderBinary(t), "run", "-F", w.cfg, "--until-end").CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	dead := readToEnd(t, w.dead)
	if len(dead) != 2 {
		t.Fatalf("the dead-letter topic holds %d records, want the 2 malformed pointers", len(dead))
	}
	for _, m := range dead {
		class, _ := headerValue(m.Headers, dlt.HeaderClass)
		_, marker := headerValue(m.Headers, pointer.HeaderPointer)
		renamed, _ := headerValue(m.Headers, dlt.RenamedHeaderPrefix+pointer.HeaderPointer)
		if class != "malformed_pointer" || marker || renamed != "v1" {
			t.Errorf("dead-letter record %s: class %q, still marked %v, renamed marker %q", m.Key, class, marker, renamed)
		}
	}
	slim := readToEnd(t, w.slim)
	if len(slim) != 2 {
		t.Errorf("the slim topic holds %d records, want 2", len(slim))
	}
	backdate(t, w.root)
	if code, rep, stderr := runGC(t, w.cfg, "--grace", gcGrace.String()); code != 0 || rep.NotPointers != 0 || sweepCounts(rep) != "0 1 0" {
		t.Errorf("gc after the malformed pointers: exit %d, %d not pointers, %s\n%s", code, rep.NotPointers, sweepCounts(rep), stderr)
	}
	assertAllResolve(t, w.store, w.slim)
}

// A serializer's pointer still waiting on the raw topic (the daemon is
// stopped) keeps its payload past the grace, and so does a pointer kept
// inside a whole-record object on the dead-letter topic; an object of the
// serializers' prefix (adopted) that nothing references is deleted.
func TestGCKeepsPayloadsOfPointersOnTheRawTopicAndInsideWholeRecords(t *testing.T) {
	t.Parallel() // its own topics and stores; runs beside the other parallel tests, after the serial ones
	w := newGCWorld(t, "gcraw", "", ", gc_adopt: [producer]")
	ser, err := serializer.New(serializer.Config{Store: w.store, StoreName: "payloads", Threshold: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	valueOf := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, 200<<10) }
	// Record 0: a pointer with a 2 MiB key, which the dead-letter topic
	// takes only whole, as a .record object holding the pointer.
	// (The serializer stores the value under a small key: under a 2 MiB key
	// storing it could not make the record small, and it would not.)
	first, err := ser.Serialize(ctx, w.raw, []byte("0"), valueOf(0), nil)
	if err != nil || !first.Offloaded {
		t.Fatalf("serialize: %v %+v", err, first)
	}
	bigKey := bytes.Repeat([]byte("k"), 2<<20)
	produceRecords(t, w.raw, []sourceRecord{{key: bigKey, value: first.Value, headers: kafkaHeaders(first.Headers)}})
	if out, err := command(offloaderBinary(t), "run", "-F", w.cfg, "--until-end").CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	// Record 1: a pointer the daemon has not read yet.
	waiting, err := ser.Serialize(ctx, w.raw, []byte("1"), valueOf(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	produceRecords(t, w.raw, []sourceRecord{{key: waiting.Key, value: waiting.Value, headers: kafkaHeaders(waiting.Headers)}})
	if err := w.store.Put(ctx, "producer/sha256/unreferenced", []byte("nobody points here"), nil); err != nil {
		t.Fatal(err)
	}
	backdate(t, w.root)
	code, rep, stderr := runGC(t, w.cfg, "--grace", gcGrace.String())
	if code != 0 {
		t.Fatalf("gc: exit %d\n%s", code, stderr)
	}
	if rep.Inside != 1 {
		t.Errorf("%d pointers found inside whole records, want 1", rep.Inside)
	}
	var deleted []string
	for _, s := range rep.Sweeps {
		deleted = append(deleted, s.Deleted.Examples...)
	}
	if fmt.Sprint(deleted) != "[producer/sha256/unreferenced]" {
		t.Errorf("deleted %v, want only the unreferenced serializer object", deleted)
	}
	res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": w.store}})
	for i, m := range readToEnd(t, w.raw) {
		got, err := confluent.Resolve(ctx, res, m)
		if err != nil || !bytes.Equal(got.Value, valueOf(i)) {
			t.Errorf("raw record %d no longer resolves: %v", i, err)
		}
	}
	dead := readToEnd(t, w.dead)
	if len(dead) != 1 {
		t.Fatalf("the dead-letter topic holds %d records, want 1", len(dead))
	}
	whole, err := confluent.Resolve(ctx, res, dead[0])
	if err != nil {
		t.Fatal(err)
	}
	kept, err := pointer.DecodeRecord(whole.Value)
	if err != nil {
		t.Fatal(err)
	}
	inner := func(name string) ([]byte, bool) {
		for _, h := range kept.Headers {
			if string(h.Key) == name {
				return h.Value, true
			}
		}
		return nil, false
	}
	if got, err := res.Resolve(ctx, kept.Value, inner); err != nil || !bytes.Equal(got.Value, valueOf(0)) {
		t.Errorf("the pointer kept whole no longer resolves: %v", err)
	}
}

// kafkaHeaders are headers as confluent-kafka-go takes them.
func kafkaHeaders(hs []serializer.Header) []kafka.Header {
	out := make([]kafka.Header, len(hs))
	for i, h := range hs {
		out[i] = kafka.Header{Key: h.Key, Value: h.Value}
	}
	return out
}
