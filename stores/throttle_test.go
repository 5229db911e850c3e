package stores_test

import (
	"context"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

// A throttled store's writes take as long as their bytes at the rate: 3 MiB
// at 4 MiB/s (a burst of 1 MiB allowed at once) take at least half a second.
func TestThrottledPutsWaitForTheirBytes(t *testing.T) {
	fs, err := filesystem.Open("fs", filesystem.Config{Root: t.TempDir(), DirMode: 0o750, FileMode: 0o640})
	if err != nil {
		t.Fatal(err)
	}
	s := stores.Throttled(fs, rate.NewLimiter(4<<20, 1<<20))
	start := time.Now()
	for i := range 3 {
		if err := s.Put(context.Background(), "k/"+string(rune('a'+i)), make([]byte, 1<<20), nil); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took < 450*time.Millisecond {
		t.Errorf("3 MiB at 4 MiB/s took %s", took)
	}
	got, err := s.Get(context.Background(), "k/c", 1<<20)
	if err != nil || len(got) != 1<<20 {
		t.Errorf("Get: %d bytes, %v", len(got), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Put(ctx, "k/d", make([]byte, 8<<20), nil); stores.KindOf(err) != stores.Canceled {
		t.Errorf("a canceled Put: %v", err)
	}
}
