package limits

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/transforms"
)

func figures() *Figures {
	return &Figures{
		Bootstrap: "b:9092", BrokerMessageMaxBytes: 1048588, ProducerMaxMessageBytes: 1000000, ConsumerReceiveMaxBytes: 100000000,
		Sources:    []TopicInfo{{Name: "raw", Role: "source", Exists: true, Partitions: 6, MaxMessageBytes: 8388608}},
		Slim:       TopicInfo{Name: "slim", Role: "slim", Exists: true, Partitions: 6, MaxMessageBytes: 1048588},
		DeadLetter: &TopicInfo{Name: "dlt", Role: "dead-letter", Exists: true, Partitions: 1, MaxMessageBytes: 1048588},
		Preserve:   true, HasOffload: true, Threshold: 1000000 - 4096,
	}
}

func TestCheckLimitsAcceptsTheDefaults(t *testing.T) {
	rows, problems := Check(figures())
	if len(problems) != 0 || len(rows) != 5 {
		t.Fatalf("%d rows, problems %+v", len(rows), problems)
	}
}

// TestCheckLimitsTheFiveGates: each gate's misalignment is found, with its fix.
func TestCheckLimitsTheFiveGates(t *testing.T) {
	cases := map[string]struct {
		change func(*Figures)
		want   []string
	}{
		"producer under the threshold": {func(f *Figures) { f.ProducerMaxMessageBytes = 500000 },
			[]string{"slim topic slim may get records of 995904 bytes", "set kafka.producer: {message.max.bytes: 995904}"}},
		"topic override under the threshold": {func(f *Figures) { f.Slim.MaxMessageBytes = 500000 },
			[]string{"the producer cannot see a topic override", "--entity-name slim --add-config max.message.bytes=995965"}},
		"fetch cap under the source size": {func(f *Figures) { f.ConsumerReceiveMaxBytes = 5000000 },
			[]string{"could never fetch them", "receive.message.max.bytes: 8389120"}},
		"no offload, dead-letter too small": {func(f *Figures) { f.HasOffload, f.Threshold = false, 0 },
			[]string{"dead-letter topic dlt may get records of 8390656 bytes (a source record with error headers)"}},
		"slim with fewer partitions": {func(f *Figures) { f.Slim.Partitions = 3 },
			[]string{"slim topic slim has 3 partitions, fewer than the source's 6", "--partitions 6"}},
		"slim retention longer than the objects live": {func(f *Figures) {
			f.Slim.RetentionMs = 14 * 24 * 3600 * 1000
			f.ObjectLifetimes = map[string]time.Duration{"blob": 7 * 24 * time.Hour}
		}, []string{"slim topic slim keeps records 336h0m0s but store blob keeps objects only 168h0m0s", "retention.ms=604800000"}},
		"slim kept forever": {func(f *Figures) {
			f.Slim.RetentionMs = -1
			f.ObjectLifetimes = map[string]time.Duration{"blob": time.Hour}
		}, []string{"keeps records forever (retention.ms -1)"}},
		"per-record decompressed cap under the threshold": {func(f *Figures) { f.Slim.MaxDecompressedBytes = 600000 },
			[]string{"slim topic slim takes records of at most 600000 bytes decompressed (max.decompressed.message.bytes) but may get one of 995904",
				"--entity-name slim --add-config max.decompressed.message.bytes=995904"}},
		"missing dead-letter topic": {func(f *Figures) { f.DeadLetter.Exists = false },
			[]string{"dead-letter topic dlt does not exist", "--create --topic dlt --partitions 6"}},
	}
	for name, c := range cases {
		f := figures()
		c.change(f)
		_, problems := Check(f)
		var all []string
		for _, p := range problems {
			all = append(all, p.What+" / "+p.Fix)
		}
		text := strings.Join(all, "\n")
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: problems lack %q:\n%s", name, w, text)
			}
		}
	}
}

// The limit a topic takes at run time is its lowest gate, named for errors.
func TestLimitOfNamesTheGateThatBinds(t *testing.T) {
	f := figures()
	cases := []struct {
		change func(*TopicInfo)
		want   string
		bytes  int
	}{
		{func(*TopicInfo) {}, "the producer's message.max.bytes (1000000; kafka.producer in the pipeline file)", 1000000},
		{func(t *TopicInfo) { t.MaxMessageBytes = 500000 }, "the slim topic slim's max.message.bytes (500000)", 500000},
		{func(t *TopicInfo) { t.MaxDecompressedBytes = 300000 }, "the slim topic slim's max.decompressed.message.bytes (300000)", 300000},
	}
	for _, c := range cases {
		slim := f.Slim
		c.change(&slim)
		if l := f.LimitOf(slim); l.Bytes != c.bytes || l.Gate != c.want {
			t.Errorf("limit %d (%s), want %d (%s)", l.Bytes, l.Gate, c.bytes, c.want)
		}
	}
}

// A transaction.timeout.ms over the broker's transaction.max.timeout.ms is
// a problem check reports and run refuses, in the same words; at or under
// it, or with a broker that does not report its maximum, it is none.
func TestTransactionTimeoutOverTheBrokersMaximum(t *testing.T) {
	f := &Figures{TransactionTimeoutMs: 1_000_000, BrokerTransactionMaxMs: 900_000}
	p := f.TransactionTimeoutProblem()
	if p == nil || !strings.Contains(p.What, "transaction.timeout.ms (1000000) is over the broker's transaction.max.timeout.ms (900000)") ||
		!strings.Contains(p.Fix, "900000 or less") {
		t.Fatalf("problem %+v", p)
	}
	if _, problems := Check(f); len(problems) == 0 || problems[0] != *p {
		t.Errorf("CheckLimits: %+v, want the transaction timeout first", problems)
	}
	for _, ok := range []*Figures{{TransactionTimeoutMs: 900_000, BrokerTransactionMaxMs: 900_000}, {TransactionTimeoutMs: 1_000_000}} {
		if p := ok.TransactionTimeoutProblem(); p != nil {
			t.Errorf("%+v: %+v", ok, p)
		}
	}
}

// The slim and dead-letter topics keep what the sources keep: a compacted
// source asks for compacted topics, with retention no shorter; an existing
// slim topic that deletes by 7 days what a compacted source keeps is a
// problem whose fix sets the source's policy; one that matches is none.
func TestTopicPolicyFollowsTheSource(t *testing.T) {
	week, month := int64(7*24*3600*1000), int64(30*24*3600*1000)
	src := TopicInfo{Name: "raw", Role: "source", Exists: true, CleanupPolicy: "compact", RetentionMs: week, RetentionBytes: -1}
	slim := TopicInfo{Name: "slim", Role: "slim", Exists: true, CleanupPolicy: "delete", RetentionMs: week, RetentionBytes: -1}
	f := &Figures{Bootstrap: "b:9092", Sources: []TopicInfo{src}, Slim: slim}
	if got := f.SourcePolicy(); got["cleanup.policy"] != "compact" || got["retention.ms"] != "-1" || got["retention.bytes"] != "-1" {
		t.Errorf("policy for a compacted source: %v", got)
	}
	problems := f.policyProblems()
	if len(problems) != 1 || !strings.Contains(problems[0].What, "slim topic slim would lose what source topic raw keeps: it is not compacted") ||
		!strings.Contains(problems[0].Fix, "--entity-name slim --add-config 'cleanup.policy=compact,retention.ms=-1,retention.bytes=-1'") {
		t.Errorf("problems %+v", problems)
	}
	f.Slim.CleanupPolicy = "compact"
	if p := f.policyProblems(); len(p) != 0 {
		t.Errorf("a compacted slim topic: %+v", p)
	}
	// Deleting sources: the longest retention wins; a shorter slim one is a problem.
	f = &Figures{Sources: []TopicInfo{{Name: "a", Exists: true, CleanupPolicy: "delete", RetentionMs: week, RetentionBytes: -1},
		{Name: "b", Exists: true, CleanupPolicy: "delete", RetentionMs: month, RetentionBytes: -1}}, Slim: slim}
	if got := f.SourcePolicy(); got["retention.ms"] != strconv.FormatInt(month, 10) || got["cleanup.policy"] != "" {
		t.Errorf("policy for deleting sources: %v", got)
	}
	if p := f.policyProblems(); len(p) != 1 || !strings.Contains(p[0].What, "source topic b keeps: it keeps records for retention.ms=604800000, b for 2592000000") {
		t.Errorf("problems %+v", p)
	}
}

// The run-time limits of the slim, retry and dead-letter topics are their
// lowest gates, by topic; without a dead-letter topic its limit is zero.
func TestTheTopologysLimits(t *testing.T) {
	f := figures()
	f.Retries = []TopicInfo{{Name: "retry-1", Role: "retry", Exists: true, Partitions: 6, MaxMessageBytes: 500000}}
	if l := f.SlimLimit(); l.Bytes != 1000000 || !strings.Contains(l.Gate, "producer's message.max.bytes") {
		t.Errorf("slim limit %+v, want the producer's 1000000", l)
	}
	limits := f.FailureLimits()
	if len(limits) != 2 || limits["retry-1"].Bytes != 500000 || limits["dlt"].Bytes != 1000000 {
		t.Errorf("failure limits %+v", limits)
	}
	if names := []string{f.Failures()[0].Name, f.Failures()[1].Name}; names[0] != "retry-1" || names[1] != "dlt" {
		t.Errorf("failure topics %v, want the retry topic, then the dead-letter topic", names)
	}
	if l := f.DeadLetterLimit(); l.Bytes != 1000000 {
		t.Errorf("dead-letter limit %+v", l)
	}
	f.DeadLetter = nil
	if l := f.DeadLetterLimit(); l.Bytes != 0 || len(f.Failures()) != 1 {
		t.Errorf("without a dead-letter topic: limit %+v, failures %v", l, f.Failures())
	}
}

// The pipeline's own figures: the first offload step's threshold (a later
// offload step's is not the slim topic's), how large a step that grows
// records lets them get, and the stores' object lifetimes (none: kept).
func TestAddPipelineTakesTheChainAndTheStores(t *testing.T) {
	f := figures()
	f.HasOffload, f.Threshold = false, 0
	f.AddPipeline(map[string]time.Duration{"blob": 168 * time.Hour, "forever": 0},
		[]transforms.Bound{bound{largest: 500 << 10, offloads: true}, bound{largest: 2 << 20}, bound{largest: 100, offloads: true}})
	if !f.HasOffload || f.Threshold != 500<<10 || f.Rehydrated != 2<<20 {
		t.Errorf("offload %v, threshold %d, rehydrated %d; want 512000 and 2097152", f.HasOffload, f.Threshold, f.Rehydrated)
	}
	if len(f.ObjectLifetimes) != 1 || f.ObjectLifetimes["blob"] != 168*time.Hour {
		t.Errorf("lifetimes %v, want blob's 168h only", f.ObjectLifetimes)
	}
}

// bound is a chain step that bounds record sizes (transforms.Bound).
type bound struct {
	largest  int
	offloads bool
}

func (b bound) Emits(int) (int, bool) { return b.largest, b.offloads }
