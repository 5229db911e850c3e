package stores

import (
	"context"

	"golang.org/x/time/rate"
)

// Throttled returns s with its writes limited to l's rate in bytes per
// second (a migration beside production traffic): Put waits until l lets
// the value's bytes through, in bursts of at most l.Burst() bytes. Reads are
// not limited.
func Throttled(s Store, l *rate.Limiter) Store { return &throttled{Store: s, l: l} }

type throttled struct {
	Store
	l *rate.Limiter
}

func (t *throttled) Put(ctx context.Context, key string, value []byte, meta Metadata) error {
	for left := len(value); left > 0; {
		n := min(left, t.l.Burst())
		if err := t.l.WaitN(ctx, n); err != nil {
			return &Error{Store: "", Op: "put", Key: key, Kind: Canceled, Err: err}
		}
		left -= n
	}
	return t.Store.Put(ctx, key, value, meta)
}
