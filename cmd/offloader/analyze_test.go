package main

import (
	"testing"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/limits"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/transforms"
)

// --threshold auto is what run would derive from the slim topic, even when
// the pipeline's own step sets a size; without the flag the step's size counts.
func TestAnalysisThresholdIsRunsAuto(t *testing.T) {
	f := &limits.Figures{ProducerMaxMessageBytes: 1_000_000, Threshold: 256 << 10,
		Slim: limits.TopicInfo{Name: "orders.slim", Role: "slim", Exists: true, MaxMessageBytes: 2 << 20}}
	p := &config.Pipeline{Transforms: []*config.Step{{Type: "offload", Config: &transforms.OffloadConfig{Threshold: settings.SizeOrAuto(256 << 10)}}}}
	for flag, want := range map[string]int{"auto": 1_000_000 - 4096, "": 256 << 10, "64KiB": 64 << 10} {
		got, why, err := analysisThreshold(p, f, flag)
		if err != nil || got != want {
			t.Errorf("--threshold %q: %d (%s), %v; want %d", flag, got, why, err, want)
		}
	}
}
