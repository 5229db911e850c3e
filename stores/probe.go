package stores

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// ProbeError says which step of a probe failed: put, get (read back), or
// compare (the object read back differs from the one written).
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
