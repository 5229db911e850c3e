package daemon

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
	for _, c := range []struct {
		o    AnalyzeOptions
		want int
		why  string
	}{
		{AnalyzeOptions{Auto: true}, 1_000_000 - 4096, "auto: the producer's message.max.bytes (1000000; kafka.producer in the pipeline file) less 4KiB"},
		{AnalyzeOptions{}, 256 << 10, "the pipeline's offload step: 256KiB"},
		{AnalyzeOptions{Threshold: 64 << 10}, 64 << 10, "--threshold 64KiB"},
	} {
		got, why := analysisThreshold(p, f, c.o)
		if got != c.want || why != c.why {
			t.Errorf("%+v: %d (%s); want %d (%s)", c.o, got, why, c.want, c.why)
		}
	}
}
