// Package storetest is the conformance suite every payload store passes:
//
//	func TestConformance(t *testing.T) { storetest.Run(t, openMyStore(t)) }
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/offloader/offloader/stores"
)

// Run checks the Store contract: round trips of empty, small and multi-MiB values
// and of 64 MiB, overwrite, Stat, not-found classification, idempotent Delete,
// refused keys, concurrent use, listing by prefix with sizes and times, and a
// canceled upload that leaves the object whole or absent.
func Run(t *testing.T, s stores.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := fmt.Sprintf("conformance/%d", time.Now().UnixNano())

	t.Run("RoundTripKeepsBytes", func(t *testing.T) {
		for _, size := range []int{0, 1, 64 << 10, 9<<20 + 7} {
			value := make([]byte, size)
			rand.Read(value)
			key := fmt.Sprintf("%s/rt/%d", prefix, size)
			if err := s.Put(ctx, key, value, stores.Metadata{"source_topic": "t", "source_offset": "1"}); err != nil {
				t.Fatalf("Put %d bytes: %v", size, err)
			}
			got, err := s.Get(ctx, key, int64(size))
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if sha256.Sum256(got) != sha256.Sum256(value) || len(got) != size {
				t.Fatalf("%d bytes stored, %d different bytes read back", size, len(got))
			}
			before := time.Now()
			info, err := s.Stat(ctx, key)
			if err != nil || info.Size != int64(size) {
				t.Fatalf("Stat = %+v, %v; want size %d", info, err, size)
			}
			// offloader gc reads the writer from Stat before it deletes.
			if info.Metadata["source_topic"] != "t" || info.Metadata["source_offset"] != "1" {
				t.Errorf("Stat's metadata = %v, want what Put stored (source_topic t, source_offset 1)", info.Metadata)
			}
			if d := info.Modified.Sub(before); info.Modified.IsZero() || d > time.Minute || d < -time.Minute {
				t.Errorf("Stat's Modified = %v, want within a minute of %v", info.Modified, before)
			}
		}
	})

	t.Run("PutOverwrites", func(t *testing.T) {
		key := prefix + "/overwrite/0"
		for _, v := range []string{"first version, longer", "second"} {
			if err := s.Put(ctx, key, []byte(v), nil); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := s.Get(ctx, key, 100); err != nil || string(got) != "second" {
			t.Fatalf("Get after overwrite = %q, %v", got, err)
		}
	})

	t.Run("GetIsBoundedByItsLimit", func(t *testing.T) {
		key := prefix + "/limit/0"
		value := bytes.Repeat([]byte("x"), 4096)
		if err := s.Put(ctx, key, value, nil); err != nil {
			t.Fatal(err)
		}
		_, err := s.Get(ctx, key, 4095)
		if !errors.Is(err, stores.ErrOverLimit) || stores.KindOf(err) != stores.Permanent {
			t.Errorf("Get(limit 4095) of 4096 bytes = %v (kind %v), want a permanent ErrOverLimit", err, stores.KindOf(err))
		}
		if got, err := s.Get(ctx, key, 4096); err != nil || !bytes.Equal(got, value) {
			t.Errorf("Get(limit 4096) of 4096 bytes = %d bytes, %v", len(got), err)
		}
	})

	t.Run("PutNeverReplacesAnotherOwnersObject", func(t *testing.T) {
		key := prefix + "/owned/0"
		mine := stores.Metadata{stores.MetaOwner: "raw/0/4", "source_topic": "raw"}
		if err := s.Put(ctx, key, []byte("victim payload"), mine); err != nil {
			t.Fatal(err)
		}
		// Small and multi-MiB (block uploads, where the backend has them).
		attacker := map[string][]byte{"small": []byte("attacker"), "large": bytes.Repeat([]byte("a"), 2<<20+1)}
		for _, other := range []stores.Metadata{{stores.MetaOwner: "raw/0/5"}, nil} {
			err := s.Put(ctx, key, attacker["small"], other)
			if !errors.Is(err, stores.ErrOwnedByOther) || stores.KindOf(err) != stores.Permanent {
				t.Errorf("Put by owner %q over raw/0/4's object = %v, want a permanent ErrOwnedByOther", other[stores.MetaOwner], err)
			}
			err = s.Put(ctx, key, attacker["large"], other)
			if !errors.Is(err, stores.ErrOwnedByOther) || stores.KindOf(err) != stores.Permanent {
				t.Errorf("Put by owner %q over raw/0/4's object = %v, want a permanent ErrOwnedByOther", other[stores.MetaOwner], err)
			}
		}
		if got, err := s.Get(ctx, key, 100); err != nil || string(got) != "victim payload" {
			t.Fatalf("the owner's object reads %q, %v after refused puts", got, err)
		}
		if err := s.Put(ctx, key, []byte("same owner again"), mine); err != nil {
			t.Fatalf("Put by the same owner (a reprocessed record) = %v, want it replaced", err)
		}
		if got, _ := s.Get(ctx, key, 100); string(got) != "same owner again" {
			t.Errorf("after the owner's second Put the object reads %q", got)
		}
		unowned := prefix + "/owned/1"
		if err := s.Put(ctx, unowned, []byte("no owner"), nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, unowned, []byte("claimed"), mine); err != nil {
			t.Errorf("Put over an object that names no owner = %v, want it replaced", err)
		}
	})

	t.Run("CanceledCallsAreCanceled", func(t *testing.T) {
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		key := prefix + "/canceled/0"
		if err := s.Put(canceled, key, []byte("x"), nil); stores.KindOf(err) != stores.Canceled {
			t.Errorf("Put with a canceled context = %v (kind %v), want canceled", err, stores.KindOf(err))
		}
		if _, err := s.Get(canceled, key, 100); stores.KindOf(err) != stores.Canceled {
			t.Errorf("Get with a canceled context = %v (kind %v), want canceled", err, stores.KindOf(err))
		}
	})

	t.Run("MissingIsNotFound", func(t *testing.T) {
		_, err := s.Get(ctx, prefix+"/missing", 100)
		if !errors.Is(err, stores.ErrNotFound) || stores.KindOf(err) != stores.NotFound {
			t.Errorf("Get missing = %v (kind %v), want ErrNotFound", err, stores.KindOf(err))
		}
		if _, err := s.Stat(ctx, prefix+"/missing"); !errors.Is(err, stores.ErrNotFound) {
			t.Errorf("Stat missing = %v, want ErrNotFound", err)
		}
	})

	t.Run("DeleteIsIdempotent", func(t *testing.T) {
		key := prefix + "/delete/0"
		if err := s.Put(ctx, key, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := s.Delete(ctx, key); err != nil {
				t.Fatalf("Delete: %v", err)
			}
		}
		if _, err := s.Get(ctx, key, 100); !errors.Is(err, stores.ErrNotFound) {
			t.Errorf("Get after Delete = %v, want ErrNotFound", err)
		}
	})

	t.Run("RefusesEscapingKeys", func(t *testing.T) {
		for _, key := range []string{"", "/etc/passwd", "../outside", "a/../../b", "a//b", "a/./b", "a\\b", "a\x00b"} {
			err := s.Put(ctx, key, []byte("x"), nil)
			if !errors.Is(err, stores.ErrInvalidKey) || stores.KindOf(err) != stores.Permanent {
				t.Errorf("Put(%q) = %v, want a permanent ErrInvalidKey", key, err)
			}
			if _, err := s.Get(ctx, key, 100); !errors.Is(err, stores.ErrInvalidKey) {
				t.Errorf("Get(%q) = %v, want ErrInvalidKey", key, err)
			}
		}
	})

	t.Run("ConcurrentPuts", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("%s/concurrent/%d", prefix, i)
				value := bytes.Repeat([]byte{byte(i)}, 100_000+i)
				if err := s.Put(ctx, key, value, nil); err != nil {
					errs <- err
					return
				}
				got, err := s.Get(ctx, key, int64(len(value)))
				if err != nil || !bytes.Equal(got, value) {
					errs <- fmt.Errorf("key %s: read back %d bytes, %v", key, len(got), err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("ListsByPrefixWithSizeAndAge", func(t *testing.T) {
		before := time.Now().Add(-time.Minute) // emulators' clocks may differ a little
		want := map[string]int64{prefix + "/list/a": 3, prefix + "/list/b/c": 5, prefix + "/list/b/d": 0}
		for key, size := range want {
			if err := s.Put(ctx, key, bytes.Repeat([]byte{'x'}, int(size)), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Put(ctx, prefix+"/listed-not/x", []byte("no"), nil); err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		err := s.List(ctx, prefix+"/list/", func(o stores.Object) error {
			got[o.Key] = o.Size
			if o.Modified.Before(before) || o.Modified.After(time.Now().Add(time.Minute)) {
				t.Errorf("%s: modified %s, not about now", o.Key, o.Modified)
			}
			return nil
		})
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("List = %v, %v; want %v", got, err, want)
		}
		stop := errors.New("enough")
		n := 0
		if err := s.List(ctx, prefix+"/list/", func(stores.Object) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
			t.Errorf("List stopped by its callback: %v after %d objects", err, n)
		}
	})

	t.Run("LargeObject", func(t *testing.T) {
		value := make([]byte, 64<<20)
		rand.Read(value)
		key := prefix + "/large/64MiB"
		if err := s.Put(ctx, key, value, nil); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, key, int64(len(value)))
		if err != nil || sha256.Sum256(got) != sha256.Sum256(value) {
			t.Fatalf("64 MiB: read back %d bytes, %v", len(got), err)
		}
	})

	t.Run("CanceledUploadLeavesNoPartObject", func(t *testing.T) {
		value := make([]byte, 32<<20)
		rand.Read(value)
		key := prefix + "/canceled/upload"
		cctx, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(5 * time.Millisecond); cancel() }()
		err := s.Put(cctx, key, value, nil)
		if err != nil && stores.KindOf(err) != stores.Canceled {
			t.Errorf("a Put canceled mid-upload: %v (%s), want canceled", err, stores.KindOf(err))
		}
		// Whether the cancel came in time or not: the object is whole or absent.
		got, gerr := s.Get(ctx, key, int64(len(value)))
		switch {
		case errors.Is(gerr, stores.ErrNotFound):
		case gerr != nil:
			t.Errorf("Get after a canceled Put: %v", gerr)
		case sha256.Sum256(got) != sha256.Sum256(value):
			t.Errorf("a canceled Put left %d bytes that are not the value", len(got))
		}
	})
}
