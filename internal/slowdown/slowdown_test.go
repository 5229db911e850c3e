package slowdown

import (
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/config"
)

// The factor is the environment's when set (at least 1), else the load per
// CPU between 1 and MaxAuto; and Scale stretches a deadline by it.
func TestTheFactorComesFromTheEnvironmentOrTheLoad(t *testing.T) {
	for _, c := range []struct {
		env, loadavg string
		cpus         int
		want         float64
		bad          bool
	}{
		{"2.5", "0.10 0.2 0.3 1/100 5", 2, 2.5, false},
		{"", "7.00 5.0 4.0 9/300 77", 2, 3.5, false},
		{"", "0.50 0.5 0.5 1/100 5", 2, 1, false},
		{"", "80.0 50.0 40.0 9/300 77", 2, MaxAuto, false},
		{"", "", 2, 1, false},
		{"0.5", "", 2, 0, true},
		{"fast", "", 2, 0, true},
	} {
		got, from, err := of(c.env, []byte(c.loadavg), c.cpus)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("env %q, load %q on %d CPUs: %v from %q (%v), want %v", c.env, c.loadavg, c.cpus, got, from, err, c.want)
		}
	}
	f, _ := Factor()
	if got, want := Scale(10*time.Second), time.Duration(float64(10*time.Second)*f); got != want {
		t.Errorf("Scale(10s) = %s, want %s", got, want)
	}
}

// The offloader processes the tests start inherit the variable: an
// OFFLOADER_ name would be read as a pipeline setting, and refused.
func TestTheVariableIsNoPipelineSetting(t *testing.T) {
	if strings.HasPrefix(Env, config.OverridePrefix) {
		t.Errorf("%s begins with %s: offloader would read it as a pipeline setting", Env, config.OverridePrefix)
	}
}
