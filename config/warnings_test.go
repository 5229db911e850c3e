package config_test

import (
	"strings"
	"testing"

	"github.com/offloader/offloader/config"
)

// Settings that weaken a guarantee without breaking it are warned about,
// each once, naming the setting; the defaults draw no warning.
func TestWarningsNameWhatWeakensAGuarantee(t *testing.T) {
	p := &config.Pipeline{Name: "p", Kafka: config.Kafka{
		Consumer: map[string]string{"auto.offset.reset": "latest", "ssl.endpoint.identification.algorithm": "none"},
		Producer: map[string]string{"enable.ssl.certificate.verification": "false"},
	}}
	got := strings.Join(p.Warnings(), "\n")
	for _, want := range []string{
		"pipelines.p.kafka.consumer.auto.offset.reset: latest: when retention deletes records",
		"pipelines.p.kafka.consumer.ssl.endpoint.identification.algorithm: none",
		"pipelines.p.kafka.producer.enable.ssl.certificate.verification: false",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	if n := len(p.Warnings()); n != 3 {
		t.Errorf("%d warnings, want 3", n)
	}
	if w := (&config.Pipeline{Name: "p", Kafka: config.Kafka{Consumer: map[string]string{"auto.offset.reset": "earliest"}}}).Warnings(); len(w) != 0 {
		t.Errorf("earliest: %v", w)
	}
}
