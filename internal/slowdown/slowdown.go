// Package slowdown tells the tests how much slower than a quiet machine
// this one runs, so that what they wait for gets that much longer instead of
// failing: a loaded CI runner or a busy laptop runs the suite as a quiet
// machine does, only slower. A deadline is a bound on a wait for a state,
// never a measurement of the machine.
//
//	deadline := time.Now().Add(slowdown.Scale(30 * time.Second))
//
// The factor is TEST_SLOWDOWN when set (a number, at least 1),
// otherwise the load per CPU when first asked (the 1-minute load average over
// the CPUs this process may use), at least 1 and at most MaxAuto.
package slowdown

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Env names the variable that sets the factor. It is a TEST_ variable, as
// the suite's others are: the offloader processes the tests start inherit
// it, and would read an OFFLOADER_ one as a pipeline setting
// (config.OverridePrefix) and refuse it.
const Env = "TEST_SLOWDOWN"

// MaxAuto caps the factor read from the load: past it a machine is too busy
// for any deadline, and a stuck test should still end.
const MaxAuto = 6

var factor = sync.OnceValues(func() (float64, string) {
	loadavg, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		loadavg = nil
	}
	f, from, err := of(os.Getenv(Env), loadavg, runtime.GOMAXPROCS(0))
	if err != nil {
		panic(err)
	}
	return f, from
})

// of is the factor the environment's value env sets, else the one of the
// load average (the contents of /proc/loadavg, nil when there is none) on
// cpus CPUs, and where it came from.
func of(env string, loadavg []byte, cpus int) (float64, string, error) {
	if env != "" {
		f, err := strconv.ParseFloat(env, 64)
		if err != nil || f < 1 {
			return 0, "", fmt.Errorf("%s=%q: want a number of at least 1 (how many times slower than a quiet machine)", Env, env)
		}
		return f, Env, nil
	}
	fields := strings.Fields(string(loadavg))
	if len(fields) == 0 {
		return 1, "no load average to read", nil
	}
	load, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 1, "no load average to read", nil
	}
	return min(max(1, load/float64(cpus)), MaxAuto), fmt.Sprintf("the load average %.1f on %d CPUs", load, cpus), nil
}

// Factor is how many times slower than a quiet machine this one runs, and
// where that came from.
func Factor() (float64, string) { return factor() }

// Scale is d made Factor times longer.
func Scale(d time.Duration) time.Duration {
	f, _ := factor()
	return time.Duration(float64(d) * f)
}
