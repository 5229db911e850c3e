package gc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/offloader/offloader/stores"
)

// MaxSkewFraction: gc refuses to delete when a store's clock is off its
// own by more than the grace divided by this.
const MaxSkewFraction = 10

// Clock measures how far a store's clock is off this one: it writes a probe
// object under prefix, reads the write time the store gives it (its
// listing's, as gc's sweep reads them), and deletes it. The skew is 0 when
// the store's time falls between the moments before and after the write
// (both cut to the second, the precision of S3's and Azure's times); else it
// is the distance to the nearer one (positive: the store is ahead).
func Clock(ctx context.Context, s stores.Store, prefix string, now func() time.Time) (time.Duration, error) {
	nonce := make([]byte, 8)
	rand.Read(nonce)
	key := prefix + "/offloader-gc-clock-" + hex.EncodeToString(nonce)
	before := now().Truncate(time.Second)
	if err := s.Put(ctx, key, []byte("offloader gc clock probe"), stores.Metadata{stores.MetaOwner: "offloader-gc"}); err != nil {
		return 0, fmt.Errorf("writing probe object %s: %w", key, err)
	}
	defer s.Delete(context.WithoutCancel(ctx), key)
	var modified time.Time
	err := s.List(ctx, key, func(o stores.Object) error {
		if o.Key == key {
			modified = o.Modified
		}
		return nil
	})
	after := now().Truncate(time.Second).Add(time.Second)
	switch {
	case err != nil:
		return 0, fmt.Errorf("listing probe object %s: %w", key, err)
	case modified.IsZero():
		return 0, fmt.Errorf("the listing of %s does not show the probe object just written there", key)
	case modified.Before(before):
		return modified.Sub(before), nil
	case modified.After(after):
		return modified.Sub(after), nil
	}
	return 0, nil
}
