package stores

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ProbeError says which step of a probe failed: put, get (read back),
// compare (the object read back differs from the one written), or list.
type ProbeError struct {
	Step string
	Key  string
	Err  error
}

func (e *ProbeError) Error() string {
	return fmt.Sprintf("%s of probe object %s: %v", e.Step, e.Key, e.Err)
}

func (e *ProbeError) Unwrap() error { return e.Err }

// Probe answers "will this store work for a pipeline?" the way the pipeline
// uses it: it writes a small object under prefix (the keys the pipeline
// writes start with it, so a permission scoped to that prefix is what is
// tested), reads it back, compares it and deletes it. A failed put or read
// back is a *ProbeError. The delete is tidying, not something the pipeline
// needs: when it fails, Probe succeeds and returns the key that stays behind.
func Probe(ctx context.Context, s Store, prefix string) (leftBehind string, err error) {
	nonce := make([]byte, 8)
	rand.Read(nonce)
	key := prefix + "/offloader-probe-" + hex.EncodeToString(nonce)
	value := []byte("offloader check probe " + hex.EncodeToString(nonce))
	if err := s.Put(ctx, key, value, Metadata{MetaOwner: "offloader-check"}); err != nil {
		return "", &ProbeError{Step: "put", Key: key, Err: err}
	}
	got, err := s.Get(ctx, key, int64(len(value)))
	if err != nil {
		s.Delete(ctx, key)
		return "", &ProbeError{Step: "get", Key: key, Err: err}
	}
	if !bytes.Equal(got, value) {
		s.Delete(ctx, key)
		return "", &ProbeError{Step: "compare", Key: key, Err: fmt.Errorf("read back %d bytes that differ from the %d written", len(got), len(value))}
	}
	if err := s.Delete(ctx, key); err != nil {
		return key, nil
	}
	return "", nil
}

// ErrListIgnoresPrefix: a store's listing returned a key outside the prefix
// it was asked for. offloader gc keeps such keys, but a listing that cannot
// be trusted to keep to its prefix hides what lies under it.
var ErrListIgnoresPrefix = errors.New("the listing returned a key outside the prefix asked for")

// ProbeList answers "does this store's listing keep to its prefix?": it
// writes two probe objects under prefix, in sibling folders whose names
// share a beginning, lists one folder, and wants exactly its own object
// back. Both are deleted again.
func ProbeList(ctx context.Context, s Store, prefix string) error {
	nonce := make([]byte, 8)
	rand.Read(nonce)
	folder := prefix + "/offloader-probe-" + hex.EncodeToString(nonce)
	inside, outside := folder+"/in", folder+"-out/out"
	for _, key := range []string{inside, outside} {
		if err := s.Put(ctx, key, []byte("offloader check listing probe"), Metadata{MetaOwner: "offloader-check"}); err != nil {
			return &ProbeError{Step: "put", Key: key, Err: err}
		}
		defer s.Delete(context.WithoutCancel(ctx), key)
	}
	var got []string
	if err := s.List(ctx, folder+"/", func(o Object) error { got = append(got, o.Key); return nil }); err != nil {
		return &ProbeError{Step: "list", Key: folder + "/", Err: err}
	}
	for _, key := range got {
		if !strings.HasPrefix(key, folder+"/") {
			return &ProbeError{Step: "list", Key: folder + "/", Err: fmt.Errorf("%w: %s", ErrListIgnoresPrefix, key)}
		}
	}
	if len(got) != 1 || got[0] != inside {
		return &ProbeError{Step: "list", Key: folder + "/", Err: fmt.Errorf("listed %v, want only %s, just written there", got, inside)}
	}
	return nil
}
