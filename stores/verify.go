package stores

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/offloader/offloader/settings"
)

// Verify is how a store's writes are checked before their pointers commit
// (a store's verify_writes setting).
type Verify string

// The checks.
const (
	// VerifyOff trusts the store's answer to a write.
	VerifyOff Verify = "off"
	// VerifyHead asks the store for the object after each write (a Stat:
	// HEAD, GetProperties, stat) and checks that it holds the value's size.
	VerifyHead Verify = "head"
	// VerifyReadBack reads each object back after its write and compares
	// its bytes with the value's.
	VerifyReadBack Verify = "read_back"
)

// Validate refuses a check that is none of the three.
func (v Verify) Validate() error { return settings.OneOf(v, VerifyOff, VerifyHead, VerifyReadBack) }

// ErrUnverified is a write the store acknowledged without keeping it.
var ErrUnverified = errors.New("the store acknowledged the write but does not hold the object")

// Verified returns s with each Put checked as v says. A check that finds no
// object, or another one, fails the Put as Retryable: a store that answers
// writes and keeps nothing is unavailable, not a cause to give up on the
// record, and the pipeline waits it out and pauses as for any outage,
// committing no pointer to an object that is not there.
func Verified(name string, s Store, v Verify) Store {
	if v == VerifyOff || v == "" {
		return s
	}
	return &verified{Store: s, name: name, v: v}
}

type verified struct {
	Store
	name string
	v    Verify
}

func (s *verified) Put(ctx context.Context, key string, value []byte, meta Metadata) error {
	if err := s.Store.Put(ctx, key, value, meta); err != nil {
		return err
	}
	var err error
	switch s.v {
	case VerifyHead:
		var info Info
		if info, err = s.Store.Stat(ctx, key); err == nil && info.Size != int64(len(value)) {
			err = fmt.Errorf("%w: it holds %d bytes, not the %d written", ErrUnverified, info.Size, len(value))
		}
	case VerifyReadBack:
		var got []byte
		if got, err = s.Store.Get(ctx, key, int64(len(value))); err == nil && !bytes.Equal(got, value) {
			err = fmt.Errorf("%w: it holds other bytes than the %d written", ErrUnverified, len(value))
		}
	}
	switch {
	case err == nil:
		return nil
	case KindOf(err) == Canceled:
		return err
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrOverLimit):
		// Not wrapped: the record's failure is the store's, not a missing
		// or oversize object of its own.
		err = fmt.Errorf("%w (verify_writes: %s): %v", ErrUnverified, s.v, err)
	case !errors.Is(err, ErrUnverified):
		// The check itself failed (the store away, or refusing reads that
		// the start-up probe made): the store's fault, whatever its kind,
		// and never the record's, so not wrapped either.
		err = fmt.Errorf("checking the write (verify_writes: %s): %v", s.v, err)
	}
	return &Error{Store: s.name, Op: "put", Key: key, Kind: Retryable, Err: err}
}
