package kafka

import (
	"fmt"
	"testing"
)

// A client repeating itself (a broker away) is logged once per kind and
// window, numbers aside; a new kind is logged at once.
func TestRepeatedClientMessagesAreLoggedOnce(t *testing.T) {
	var r repeats
	down := "127.0.0.1:19092/1: Connect to ipv4#127.0.0.1:19092 failed: Connection refused (after %dms in state CONNECT)"
	logged := 0
	for i := range 100 {
		if ok, _ := r.log(fmtDown(down, i)); ok {
			logged++
		}
	}
	if logged != 1 {
		t.Errorf("%d of 100 repeats logged, want 1", logged)
	}
	if ok, _ := r.log("1/1 brokers are down"); !ok {
		t.Error("a new kind of message was not logged")
	}
	s := r.seen[digitsKey(fmtDown(down, 0))]
	if s == nil || s.suppressed != 99 {
		t.Fatalf("suppressed count %+v, want 99", s)
	}
	s.logged = s.logged.Add(-repeatWindow) // the window has passed
	if ok, n := r.log(fmtDown(down, 7)); !ok || n != 99 {
		t.Errorf("after the window: logged %v with %d left out, want true and 99", ok, n)
	}
}

func fmtDown(format string, ms int) string { return fmt.Sprintf(format, ms) }

func digitsKey(msg string) string { return digits.ReplaceAllString(msg, "#") }
