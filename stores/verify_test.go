package stores

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// lying keeps what head or read_back would find instead of what was
// written: nothing, a shorter object, or other bytes of the same size.
type lying struct {
	Store
	keep func(value []byte) []byte
	objs map[string][]byte
}

func (l *lying) Put(_ context.Context, key string, value []byte, _ Metadata) error {
	if v := l.keep(value); v != nil {
		l.objs[key] = v
	}
	return nil
}

func (l *lying) Stat(_ context.Context, key string) (Info, error) {
	v, ok := l.objs[key]
	if !ok {
		return Info{}, &Error{Store: "s", Op: "stat", Key: key, Kind: NotFound, Err: ErrNotFound}
	}
	return Info{Size: int64(len(v))}, nil
}

func (l *lying) Get(_ context.Context, key string, limit int64) ([]byte, error) {
	v, ok := l.objs[key]
	switch {
	case !ok:
		return nil, &Error{Store: "s", Op: "get", Key: key, Kind: NotFound, Err: ErrNotFound}
	case int64(len(v)) > limit:
		return nil, &Error{Store: "s", Op: "get", Key: key, Kind: Permanent, Err: ErrOverLimit}
	}
	return v, nil
}

// A write the store acknowledges but does not keep fails as Retryable, and
// never as not found (which would dead-letter the record): head catches a
// missing or short object, read_back other bytes too; off and a truthful
// store pass.
func TestVerifiedWritesCatchAStoreThatKeepsNothing(t *testing.T) {
	value := []byte("the payload")
	for _, c := range []struct {
		name    string
		v       Verify
		keep    func([]byte) []byte
		caught  bool
		wantErr string
	}{
		{"nothing kept, head", VerifyHead, func([]byte) []byte { return nil }, true, "object not found"},
		{"nothing kept, read_back", VerifyReadBack, func([]byte) []byte { return nil }, true, "object not found"},
		{"cut short, head", VerifyHead, func(v []byte) []byte { return v[:3] }, true, "holds 3 bytes, not the 11 written"},
		{"other bytes, head", VerifyHead, func(v []byte) []byte { return []byte(strings.ToUpper(string(v))) }, false, ""},
		{"other bytes, read_back", VerifyReadBack, func(v []byte) []byte { return []byte(strings.ToUpper(string(v))) }, true, "other bytes than the 11 written"},
		{"nothing kept, off", VerifyOff, func([]byte) []byte { return nil }, false, ""},
		{"kept, read_back", VerifyReadBack, func(v []byte) []byte { return v }, false, ""},
	} {
		s := Verified("blob", &lying{keep: c.keep, objs: map[string][]byte{}}, c.v)
		err := s.Put(context.Background(), "p/c/raw/0/1", value, nil)
		switch {
		case !c.caught && err != nil:
			t.Errorf("%s: %v, want the write taken", c.name, err)
		case c.caught && (!errors.Is(err, ErrUnverified) || KindOf(err) != Retryable || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), `store "blob"`)):
			t.Errorf("%s: %v (kind %v), want a retryable ErrUnverified saying %q", c.name, err, KindOf(err), c.wantErr)
		}
	}
}

// refusing answers Stat with a permanent refusal (a credential that may
// write but not read).
type refusing struct{ Store }

func (refusing) Put(context.Context, string, []byte, Metadata) error { return nil }
func (refusing) Stat(_ context.Context, key string) (Info, error) {
	return Info{}, &Error{Store: "s", Op: "stat", Key: key, Kind: Permanent, Err: errors.New("HTTP 403")}
}

// A check that fails for good is the store's fault, not the record's:
// retryable, so the pipeline pauses rather than dead-letter every record.
func TestAFailedCheckIsTheStoresFault(t *testing.T) {
	err := Verified("blob", refusing{}, VerifyHead).Put(context.Background(), "k", []byte("v"), nil)
	if KindOf(err) != Retryable || !strings.Contains(err.Error(), "checking the write (verify_writes: head): ") || !strings.Contains(err.Error(), "HTTP 403") {
		t.Errorf("%v (kind %v), want a retryable failure of the check naming its cause", err, KindOf(err))
	}
}
