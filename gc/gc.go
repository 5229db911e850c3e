// Package gc decides which payloads no record can still reference, and
// deletes those and nothing else (offloader gc). It is a procedure over two
// small ports: Log, what it reads of Kafka, and the stores.Store of each
// payload store, so that it is tested without a broker.
//
//	report, err := gc.Collect(ctx, plan, log, openStores)
//
// An object is deleted only when gc has proven three things:
//
//   - no record references it. Every partition of every topic that may hold
//     a pointer (slim, retry, dead-letter, and the source topics from the
//     group's committed offsets) was read without a gap from where it
//     starts to an end checked after the read, read_committed, and the
//     records past that end (behind an open transaction, or committed
//     during the read) were read uncommitted and all count as references.
//     Whole-record objects (.record) are looked inside. Any offset reset,
//     consumer error or topic that cannot be described stops gc before it
//     deletes anything; only a topic that does not exist counts as empty.
//   - it is this pipeline's: its key lies under a prefix the pipeline
//     writes (or adopts), and its metadata names the pipeline as its writer
//     (stores.MetaWriter) and the pipeline's Kafka cluster
//     (stores.MetaCluster); under an adopted prefix, an object that names
//     no writer or no cluster counts as the pipeline's too.
//
// References are matched by the physical place of the store a pointer
// names (Plan.Places) and the key, so that a pointer naming one of two
// names of one store protects the object listed through the other.
//   - it is older than the grace: written before the reading began, less a
//     grace no shorter than the longest an upload can precede its commit
//     (Floor), by a store clock checked against gc's own (Clock).
//
// Wherever one of them cannot be proven, the object is kept and the Report
// says why.
package gc

import (
	"context"
	"fmt"
	"time"

	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/topiclog"
)

// Plan is what one gc run covers: the pipeline's topics, its key prefixes,
// its identity as a writer, and the grace.
type Plan struct {
	// Writer is the pipeline's writer identity (stores.MetaWriter).
	Writer string
	// Cluster is the id of the Kafka cluster whose topics gc reads
	// (stores.MetaCluster): another cluster's objects are kept.
	Cluster string
	// Places are the physical places of the pipeline's stores, by name
	// (stores.Located); a name without one is a place of its own.
	Places map[string]string
	// Group is the pipeline's consumer group on the source topics.
	Group        string
	SourceTopics []string
	SlimTopic    string
	RetryTopics  []string
	// DeadLetterTopic is empty without one.
	DeadLetterTopic string
	// Prefixes are the key prefixes gc lists.
	Prefixes []Prefix
	// Grace keeps unreferenced objects written less than this before the
	// reading began. It must be at least Floor.
	Grace time.Duration
	// Floor is the longest an object can be written before the commit of
	// the record that references it (Floor).
	Floor time.Duration
	// DryRun deletes nothing (and writes no clock probe).
	DryRun bool
	// Now is the clock (time.Now outside tests).
	Now func() time.Time
	// Progress, when set, is told what gc does next, a line at a time.
	Progress func(format string, args ...any)
}

// place is the physical place of the store named name.
func (p Plan) place(name string) string {
	if place, ok := p.Places[name]; ok {
		return place
	}
	return "store " + name
}

// Prefix is a key prefix of a store, without its trailing slash.
type Prefix struct {
	Store  string
	Prefix string
	// Adopted: objects under it that name no writer, or no cluster, count
	// as the pipeline's (written by older versions, or by the serializers).
	Adopted bool
}

// Floor is the longest an upload can precede the commit of the record that
// references it: the store budget (the upload, retries included), then the
// transaction it is produced in, which may stay open until
// transaction.timeout.ms, then the commit interval that may pass before it
// is begun. A grace shorter than that could delete an object whose pointer
// commits right after gc read the topics.
func Floor(storeBudget, transactionTimeout, commitInterval time.Duration) time.Duration {
	return storeBudget + transactionTimeout + commitInterval
}

// Collect reads the plan's topics, then lists and sweeps its prefixes, and
// deletes (unless DryRun) what it proved unreferenced, the pipeline's and
// old. An error means it stopped; the report says what was done before.
func Collect(ctx context.Context, plan Plan, log topiclog.Log, open map[string]stores.Store) (*Report, error) {
	if plan.Now == nil {
		plan.Now = time.Now
	}
	if plan.Progress == nil {
		plan.Progress = func(string, ...any) {}
	}
	rep := &Report{Grace: plan.Grace, DryRun: plan.DryRun}
	if plan.Grace < plan.Floor {
		return rep, &GraceError{Grace: plan.Grace, Floor: plan.Floor}
	}
	for _, p := range plan.Prefixes {
		if _, ok := open[p.Store]; !ok {
			return rep, fmt.Errorf("store %q is not open", p.Store)
		}
	}
	if !plan.DryRun {
		for _, name := range prefixStores(plan.Prefixes) {
			skew, err := Clock(ctx, open[name], firstPrefix(plan.Prefixes, name), plan.Now)
			if err != nil {
				return rep, fmt.Errorf("nothing was deleted: checking store %q's clock: %w", name, err)
			}
			rep.Skews = append(rep.Skews, StoreSkew{Store: name, Skew: skew})
			if limit := plan.Grace / MaxSkewFraction; skew > limit || -skew > limit {
				return rep, &SkewError{Store: name, Skew: skew, Limit: limit}
			}
		}
	}
	began := plan.Now()
	rep.Cutoff = began.Add(-plan.Grace)
	start := time.Now()
	refs, err := readReferences(ctx, plan, log, open, rep)
	rep.ReadSeconds = time.Since(start).Seconds()
	if err != nil {
		return rep, fmt.Errorf("nothing was deleted: %w", err)
	}
	start = time.Now()
	defer func() { rep.SweepSeconds = time.Since(start).Seconds() }()
	swept := map[[2]string]bool{}
	for _, p := range plan.Prefixes {
		// Two names of one place with one prefix list the same objects:
		// once is enough.
		k := [2]string{plan.place(p.Store), p.Prefix}
		if swept[k] {
			continue
		}
		swept[k] = true
		plan.Progress("listing store %q under %s/", p.Store, p.Prefix)
		sweep, err := sweepPrefix(ctx, plan, open[p.Store], p, refs, rep.Cutoff)
		rep.Sweeps = append(rep.Sweeps, sweep)
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func prefixStores(ps []Prefix) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range ps {
		if !seen[p.Store] {
			seen[p.Store] = true
			out = append(out, p.Store)
		}
	}
	return out
}

func firstPrefix(ps []Prefix, store string) string {
	for _, p := range ps {
		if p.Store == store {
			return p.Prefix
		}
	}
	return ""
}
