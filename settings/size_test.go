package settings

import (
	"strings"
	"testing"
)

// TestParseSize pins the units operators write in pipeline files.
func TestParseSize(t *testing.T) {
	good := map[string]Size{
		"0": 0, "65536": 65536, "64KiB": 65536, "1MiB": 1 << 20, "1.5MiB": 3 << 19,
		"2GiB": 2 << 30, "10MB": 10_000_000, "1KB": 1000, "512B": 512, " 8 KiB ": 8192,
	}
	for in, want := range good {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1.3B", "KiB", "1TB", "ten", "NaN", "1e400"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, got)
		}
	}
}

// TestSizeStringRoundTrips: printed sizes read back to the same number of bytes.
func TestSizeStringRoundTrips(t *testing.T) {
	for _, s := range []Size{0, 1, 1000, KiB, 3 * KiB, MiB + 1, 64 * MiB, 2 * GiB} {
		back, err := ParseSize(s.String())
		if err != nil || back != s {
			t.Errorf("%d printed as %q reads back as %d (%v)", s, s.String(), back, err)
		}
	}
}

// A threshold-like setting: the word auto, or a size; written back the same way.
func TestSizeOrAutoDecodesAutoOrASize(t *testing.T) {
	type cfg struct {
		Threshold SizeOrAuto `key:"threshold"`
	}
	for raw, want := range map[any]SizeOrAuto{"auto": Auto, "64KiB": SizeOrAuto(64 * KiB), 4096: 4096} {
		var c cfg
		if problems := Decode("p", map[string]any{"threshold": raw}, &c); len(problems) > 0 || c.Threshold != want {
			t.Errorf("%v: got %v (%v), want %v", raw, c.Threshold, problems, want)
		}
		if got := Encode(c).(map[string]any)["threshold"]; got != want.String() {
			t.Errorf("%v encodes as %v, want %v", raw, got, want)
		}
	}
	var c cfg
	problems := Decode("p", map[string]any{"threshold": "huge"}, &c)
	if len(problems) != 1 || !strings.Contains(problems.Error(), `p.threshold: must be auto or a size such as 65536, 64KiB or 1MiB, got "huge"`) {
		t.Errorf("got %v", problems)
	}
}

// Approx rounds to a tenth of the largest unit the size reaches.
func TestSizeApprox(t *testing.T) {
	for in, want := range map[Size]string{0: "0 B", 900: "900 B", 1536: "1.5 KiB", 5*MiB + 200*KiB: "5.2 MiB", 3 * GiB: "3.0 GiB"} {
		if got := in.Approx(); got != want {
			t.Errorf("Size(%d).Approx() = %q, want %q", int64(in), got, want)
		}
	}
}
