package settings

import "testing"

func TestOneOfNamesTheValuesItTakes(t *testing.T) {
	type level string
	if err := OneOf(level("info"), "debug", "info", "warn"); err != nil {
		t.Errorf("a value it takes: %v", err)
	}
	for v, want := range map[level]string{
		"trace": `must be "debug", "info" or "warn", got "trace"`,
		"":      `must be "debug", "info" or "warn", got ""`,
	} {
		if err := OneOf(v, "debug", "info", "warn"); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", v, err, want)
		}
	}
	if err := OneOf(level("x"), "only"); err == nil || err.Error() != `must be "only", got "x"` {
		t.Errorf("one value: %v", err)
	}
}
