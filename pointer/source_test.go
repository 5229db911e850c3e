package pointer

import (
	"errors"
	"testing"
)

func TestSourceHeaderRoundTrips(t *testing.T) {
	v := Source("orders.raw", 3, 1207)
	if string(v) != "orders.raw/3/1207" {
		t.Fatalf("Source = %q", v)
	}
	topic, p, o, err := ParseSource(v)
	if err != nil || topic != "orders.raw" || p != 3 || o != 1207 {
		t.Errorf("ParseSource = %q %d %d %v", topic, p, o, err)
	}
	for _, bad := range []string{"", "orders", "orders/3", "/3/4", "t/-1/4", "t/1/+4", "t/1/x", "t/99999999999/1"} {
		if _, _, _, err := ParseSource([]byte(bad)); !errors.Is(err, ErrBadSource) {
			t.Errorf("ParseSource(%q) = %v, want ErrBadSource", bad, err)
		}
	}
}
