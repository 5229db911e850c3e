package transforms

import (
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/stores"
)

// Build names each step, gates the ones with an if:, builds the first
// offload step again at the dead-letter topic's limit, and says where it
// offloads.
func TestBuildAssemblesTheChain(t *testing.T) {
	deps := Deps{Pipeline: "p", Stores: map[string]stores.Store{"mem": &memStore{objects: map[string][]byte{}}},
		StoreRetry: stores.DefaultRetryPolicy(time.Second), SlimTopicLimit: 1000000}
	hasHeader := predicateConfig(t, "has_header", map[string]any{"name": "skip"})
	steps := []Step{
		{Type: "filter", Config: stepConfig(t, "filter", nil), If: &Condition{Type: "has_header", Config: hasHeader}},
		{Type: "offload", Config: stepConfig(t, "offload", map[string]any{"store": "mem", "threshold": "auto"})},
	}
	c, err := Build(steps, deps, 2000000, "the producer's message.max.bytes (1000000)")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Steps) != 2 || c.Names[0] != "transforms[0] (filter)" || c.Names[1] != "transforms[1] (offload)" {
		t.Fatalf("steps %d, names %v", len(c.Steps), c.Names)
	}
	if _, gated := c.Steps[0].(pipeline.Gate); !gated {
		t.Errorf("the filter with an if: is %T, want a pipeline.Gate", c.Steps[0])
	}
	main, ok := c.Steps[1].(*Offload)
	if !ok || main.Threshold() != 1000000-int(AutoThresholdHeadroom) {
		t.Fatalf("the offload step: %T %+v", c.Steps[1], c.Steps[1])
	}
	if c.DeadLetter == nil || c.DeadLetter.Threshold() != 2000000-int(AutoThresholdHeadroom) {
		t.Errorf("the dead-letter offload: %+v, want threshold auto at the dead-letter limit 2000000", c.DeadLetter)
	}
	if !strings.Contains(c.Threshold, "995904 bytes (threshold: auto, from the producer's message.max.bytes (1000000) less 4KiB of headroom)") {
		t.Errorf("threshold said as %q", c.Threshold)
	}
	// Without a dead-letter topic there is no second offload step; without
	// an offload step the threshold says so; a bad step names its place.
	if c, err := Build(steps[1:], deps, 0, ""); err != nil || c.DeadLetter != nil {
		t.Errorf("without a dead-letter topic: %+v, %v", c, err)
	}
	if c, err := Build(steps[:1], deps, 0, ""); err != nil || c.Threshold != "none (no offload step)" {
		t.Errorf("without an offload step: %+v, %v", c, err)
	}
	bad := []Step{{Type: "offload", Config: stepConfig(t, "offload", map[string]any{"store": "elsewhere", "threshold": "auto"})}}
	if _, err := Build(bad, deps, 0, ""); err == nil || !strings.Contains(err.Error(), "transforms[0] (offload)") {
		t.Errorf("a step naming a store that is not open: %v", err)
	}
}

// The offload steps' thresholds are read by step, the first is the one
// run derives from, and the first store-writing step's if: says which
// records it takes.
func TestTheOffloadStepsSettings(t *testing.T) {
	steps := []Step{
		{Type: "compress_inline", Config: stepConfig(t, "compress_inline", map[string]any{})},
		{Type: "offload", Config: stepConfig(t, "offload", map[string]any{"store": "mem", "threshold": "500KiB"}), Negate: true,
			If: &Condition{Type: "has_header", Config: predicateConfig(t, "has_header", map[string]any{"name": "keep-inline"})}},
		{Type: "offload", Config: stepConfig(t, "offload", map[string]any{"store": "mem", "threshold": "auto"})},
	}
	th := Thresholds(steps)
	if len(th) != 2 || th[1] != 500<<10 || !th[2].IsAuto() {
		t.Fatalf("thresholds %v", th)
	}
	if first, ok := OffloadThreshold(steps); !ok || first != 500<<10 {
		t.Fatalf("first threshold %v, %v", first, ok)
	}
	if _, ok := OffloadThreshold(steps[:1]); ok {
		t.Fatal("a chain without an offload step has a threshold")
	}
	applies, err := OffloadApplies(steps)
	if err != nil || applies == nil {
		t.Fatalf("applies %v, %v", applies != nil, err)
	}
	kept := &pipeline.Record{Headers: []pipeline.Header{{Key: "keep-inline", Value: []byte("1")}}}
	if applies(kept) || !applies(&pipeline.Record{}) {
		t.Errorf("negated has_header: takes a marked record %v, an unmarked one %v", applies(kept), applies(&pipeline.Record{}))
	}
	if applies, err := OffloadApplies(steps[2:]); err != nil || applies != nil {
		t.Errorf("a step without if: takes every record: %v, %v", applies != nil, err)
	}
}
