package integration

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/admin"
)

// instance is one offloader run of the scale-out test, known by its
// transactional id (its group.instance.id too).
type instance struct {
	id  string
	d   *daemon
	url string
}

// steadyProducer writes records keyed "0", "1", ... to partition key % n at
// a steady rate until stopped; value(i) is record i's value.
type steadyProducer struct {
	p      *kafka.Producer
	sent   atomic.Int64
	failed atomic.Int64
	stop   chan struct{}
	done   sync.WaitGroup
}

func scaleValue(i int) []byte {
	size := 1000
	if i%100 == 0 {
		size = 80 << 10 // offloaded at the tests' 64 KiB threshold
	}
	v := bytes.Repeat([]byte{byte('a' + i%26)}, size)
	copy(v, strconv.Itoa(i)+":")
	return v
}

func startSteadyProducer(t *testing.T, topic string, partitions int, perSecond int) *steadyProducer {
	t.Helper()
	return startSteadyProducerOn(t, bootstrap, topic, partitions, perSecond)
}

// startSteadyProducerOn is startSteadyProducer on the cluster at bs.
func startSteadyProducerOn(t *testing.T, bs, topic string, partitions int, perSecond int) *steadyProducer {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bs, "enable.idempotence": true, "linger.ms": 5})
	if err != nil {
		t.Fatal(err)
	}
	sp := &steadyProducer{p: p, stop: make(chan struct{})}
	sp.done.Add(2)
	go func() {
		defer sp.done.Done()
		for e := range p.Events() {
			if m, ok := e.(*kafka.Message); ok && m.TopicPartition.Error != nil {
				sp.failed.Add(1)
			}
		}
	}()
	go func() {
		defer sp.done.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		i := 0
		for {
			select {
			case <-sp.stop:
				p.Flush(30_000)
				p.Close()
				return
			case <-tick.C:
				for range perSecond / 100 {
					err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % partitions)},
						Key: []byte(strconv.Itoa(i)), Value: scaleValue(i)}, nil)
					if err != nil {
						sp.failed.Add(1)
					}
					i++
					sp.sent.Store(int64(i))
				}
			}
		}
	}()
	return sp
}

// finish stops producing and returns how many records were written.
func (sp *steadyProducer) finish(t *testing.T) int {
	t.Helper()
	close(sp.stop)
	sp.done.Wait()
	if n := sp.failed.Load(); n > 0 {
		t.Fatalf("%d records could not be produced", n)
	}
	return int(sp.sent.Load())
}

// TestScaleOutKeepsExactlyOnce: a pipeline on 12 partitions, with records
// arriving all along, scales from 1 instance to 3 and back to 1, then 3
// instances restart one by one (SIGTERM, start again), then one is killed
// with SIGKILL and started again. Reading the slim topic read_committed,
// every record is there once, in order per partition, and the group's
// offsets cover the raw topic. It logs how long output paused around each
// step (docs/operations.md reports the figures).
func TestScaleOutKeepsExactlyOnce(t *testing.T) {
	t.Parallel()
	const partitions = 12
	raw, slim, root, cfg := filesystemPipeline(t, "scaled", partitions)
	setTopicConfig(t, slim, "message.timestamp.type", "LogAppendTime") // a slim record's time is when it was written
	group := groupOf(t, cfg)
	base := uniqueName(t, "scale")
	start := func(n int) *instance {
		in := &instance{id: fmt.Sprintf("%s-%d", base, n)}
		in.d = startDaemon(t, cfg, "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0", "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+in.id)
		in.url = in.d.metricsURL(t)
		return in
	}
	type step struct {
		name string
		at   time.Time
	}
	var steps []step
	// mark begins a step: it returns the group's committed offsets then.
	mark := func(name string) map[int32]int64 {
		steps = append(steps, step{name, time.Now()})
		return committedByPartition(t, bootstrap, group, raw)
	}
	balanced := func(since map[int32]int64, live ...*instance) {
		t.Helper()
		flowing(t, bootstrap, group, raw, partitions, since, 90*time.Second, live...)
	}

	prod := startSteadyProducer(t, raw, partitions, 300)
	a := start(0)
	balanced(mark("1 instance starts"), a)
	at := mark("scale up: 2 instances join")
	b, c := start(1), start(2)
	balanced(at, a, b, c)
	at = mark("scale down: 2 instances stop (SIGTERM)")
	for _, in := range []*instance{b, c} {
		if code := in.d.stop(t, 45*time.Second); code != 0 {
			t.Fatalf("%s: exit %d after SIGTERM", in.id, code)
		}
	}
	balanced(at, a)
	at = mark("scale up again: 2 instances join")
	b, c = start(1), start(2)
	live := []*instance{a, b, c}
	balanced(at, live...)
	for i := range live {
		at = mark("rolling restart of " + live[i].id)
		if code := live[i].d.stop(t, 45*time.Second); code != 0 {
			t.Fatalf("%s: exit %d after SIGTERM", live[i].id, code)
		}
		live[i] = start(i)
		balanced(at, live...)
	}
	at = mark("kill -9 of " + live[2].id + ", started again")
	live[2].d.kill9()
	live[2] = start(2)
	balanced(at, live...)
	mark("producer stops")
	n := prod.finish(t)

	got := steadyOutput(t, bootstrap, slim, group, raw, root, n, partitions, live...)
	t.Logf("%d records through %d steps, each once and in order", n, len(steps))
	for i, s := range steps[:len(steps)-1] {
		all, one := outputPauses(got, s.at, steps[i+1].at)
		t.Logf("%-45s no output at all for %6s; the longest stall of one partition %6s", s.name, all, one)
	}
}

// steadyOutput reads the slim topic of a steadyProducer's n records on the
// cluster at bs once every live instance stopped (SIGTERM), and checks that
// it holds each record once, in order, in its source partition, the
// offloaded ones resolving from the filesystem store at root to their
// values, and that the group's offsets cover the raw topic.
func steadyOutput(t *testing.T, bs, slim, group, raw, root string, n, partitions int, live ...*instance) []*kafka.Message {
	t.Helper()
	got := consumeFrom(t, bs, slim, "read_committed", n, 3*time.Minute)
	for _, in := range live {
		if code := in.d.stop(t, 45*time.Second); code != 0 {
			t.Errorf("%s: exit %d after SIGTERM", in.id, code)
		}
	}
	store := openFS(t, root)
	check := func(i int, m *kafka.Message) {
		if m.TopicPartition.Partition != int32(i%partitions) {
			t.Fatalf("key %d in slim partition %d, source partition %d", i, m.TopicPartition.Partition, i%partitions)
		}
		if i%100 == 0 {
			if v := resolve(t, store, m); !bytes.Equal(v, scaleValue(i)) {
				t.Fatalf("key %d resolved to %d different bytes", i, len(v))
			}
		}
	}
	// The source as the brokers hold it: through a leader change, an
	// idempotent producer can still write a record twice (its retry of a
	// batch the old leader had appended), and then the source holds it at
	// two offsets, each of which the slim topic must hold once.
	source := consumeFrom(t, bs, raw, "read_committed", n, 3*time.Minute)
	if len(source) == n {
		assertEachOnce(t, got, n, check)
	} else {
		assertCopyOf(t, source, got, n, check)
	}
	if committed := committedTotal(t, bs, group, raw); committed != int64(len(source)) {
		t.Errorf("the group committed offsets covering %d records, the source holds %d", committed, len(source))
	}
	return got
}

// assertCopyOf checks that the slim records got are the source records
// source, partition by partition in order, each once, when the source
// holds some of the n keys produced more than once; check sees each.
func assertCopyOf(t *testing.T, source, got []*kafka.Message, n int, check func(i int, m *kafka.Message)) {
	t.Helper()
	keys := func(ms []*kafka.Message) map[int32][]string {
		out := map[int32][]string{}
		for _, m := range ms {
			out[m.TopicPartition.Partition] = append(out[m.TopicPartition.Partition], string(m.Key))
		}
		return out
	}
	want, have := keys(source), keys(got)
	for p, ks := range want {
		if !slices.Equal(ks, have[p]) {
			t.Fatalf("slim partition %d holds %d records, its source partition %d: not a copy record for record", p, len(have[p]), len(ks))
		}
	}
	seen := map[string]int{}
	for _, m := range source {
		seen[string(m.Key)]++
	}
	var twice []string
	for i := range n {
		switch seen[strconv.Itoa(i)] {
		case 0:
			t.Fatalf("the source holds no record %d of the %d produced", i, n)
		case 1:
		default:
			twice = append(twice, strconv.Itoa(i))
		}
	}
	for _, m := range got {
		i, _ := strconv.Atoi(string(m.Key))
		check(i, m)
	}
	t.Logf("the source holds %d records for the %d produced (the producer wrote %s twice through a leader change); the slim topic holds each of them once, in order",
		len(source), n, strings.Join(twice, ", "))
}

// flowing waits until the live instances hold every partition of topic (on
// the cluster at bs) between them, each some, and the group's committed offset of every
// partition moved past since (where it stood when a step began): output
// flows again on every partition. It returns how long that took.
func flowing(t *testing.T, bs, group, topic string, partitions int, since map[int32]int64, timeout time.Duration, live ...*instance) time.Duration {
	t.Helper()
	began := time.Now()
	deadline := began.Add(scaled(timeout))
	for {
		held, ok := 0, true
		var sts []admin.Status
		for _, in := range live {
			st := adminStatus(t, in.url)
			sts = append(sts, st)
			held += len(st.Partitions)
			ok = ok && len(st.Partitions) > 0
		}
		var now map[int32]int64
		if ok && held == partitions {
			now = committedByPartition(t, bs, group, topic)
			for p := range int32(partitions) {
				ok = ok && now[p] > since[p]
			}
			if ok {
				return time.Since(began)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d instances did not share the %d partitions, each committing, within %s: committed %v, from %v; status %+v",
				len(live), partitions, timeout, now, since, sts)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// outputPauses are, over the gaps between slim records that end between
// from and to (a stall a step caused ends within it: the next step begins
// once every instance committed), the longest time no slim record was
// written at all, and the longest any one partition went without one.
func outputPauses(got []*kafka.Message, from, to time.Time) (all, one time.Duration) {
	var times []time.Time
	byPartition := map[int32][]time.Time{}
	for _, m := range got {
		times = append(times, m.Timestamp)
		byPartition[m.TopicPartition.Partition] = append(byPartition[m.TopicPartition.Partition], m.Timestamp)
	}
	longest := func(ts []time.Time) time.Duration {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		var d time.Duration
		for i := 1; i < len(ts); i++ {
			if ts[i].After(from) && !ts[i].After(to) {
				d = max(d, ts[i].Sub(ts[i-1]))
			}
		}
		return d.Round(10 * time.Millisecond)
	}
	all = longest(times)
	for _, ts := range byPartition {
		one = max(one, longest(ts))
	}
	return all, one
}
