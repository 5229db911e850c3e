package stores

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotFound is returned by Get and Stat when no object exists under the key.
var ErrNotFound = errors.New("object not found")

// ErrInvalidKey is returned for keys that could leave the store's root or that a
// backend cannot represent (empty, absolute, `..` segments, control characters).
var ErrInvalidKey = errors.New("invalid object key")

// ErrOverLimit is returned by Get when the object holds more bytes than the
// caller's limit; nothing of it was read.
var ErrOverLimit = errors.New("object is larger than the read limit")

// ErrOwnedByOther is returned by Put when an object under the key was written
// for another owner (see MetaOwner); that object is left as it was.
var ErrOwnedByOther = errors.New("object under this key belongs to another record")

// Kind classifies a store failure for the caller's decision: retry, skip or give up.
type Kind int

const (
	// Permanent failures do not go away by retrying: bad credentials, a missing
	// container that offloader may not create, an invalid key.
	Permanent Kind = iota
	// Retryable failures are transient: timeouts, connection errors, throttling,
	// server errors. The same call may succeed later.
	Retryable
	// NotFound means the object does not exist.
	NotFound
	// Canceled means the caller gave the call up (its context was canceled:
	// a shutdown, or a batch broken by another record's failure). It says
	// nothing about the store or the record.
	Canceled
)

func (k Kind) String() string {
	switch k {
	case Retryable:
		return "retryable"
	case NotFound:
		return "not found"
	case Canceled:
		return "canceled"
	}
	return "permanent"
}

// Error is a store failure with its operation, key and classification.
type Error struct {
	Store string // the configured store name
	Op    string // put, get, stat, delete
	Key   string
	Kind  Kind
	Err   error
}

func (e *Error) Error() string {
	return fmt.Sprintf("store %q: %s %s: %s (%s)", e.Store, e.Op, e.Key, e.Err, e.Kind)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotFound) hold for every not-found Error.
func (e *Error) Is(target error) bool {
	return target == ErrNotFound && e.Kind == NotFound
}

// KindOf returns the classification of err: the Kind of a wrapped *Error,
// NotFound for ErrNotFound, Retryable for context deadline errors raised while a
// store call was in flight, Canceled for a canceled context, and Permanent for
// anything else.
func KindOf(err error) Kind {
	var se *Error
	switch {
	case errors.As(err, &se):
		return se.Kind
	case errors.Is(err, ErrNotFound):
		return NotFound
	case errors.Is(err, context.DeadlineExceeded):
		return Retryable
	case errors.Is(err, context.Canceled):
		return Canceled
	}
	return Permanent
}

// IsRetryable reports whether the failed call may succeed if tried again.
func IsRetryable(err error) bool { return err != nil && KindOf(err) == Retryable }
