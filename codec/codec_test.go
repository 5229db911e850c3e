package codec

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestRoundTripEveryCodec(t *testing.T) {
	random := make([]byte, 300<<10)
	rand.Read(random)
	inputs := map[string][]byte{
		"empty":        {},
		"compressible": bytes.Repeat([]byte("offloader "), 200_000),
		"random":       random,
	}
	for _, name := range Names {
		for what, in := range inputs {
			enc, err := Encode(name, in)
			if err != nil {
				t.Fatalf("%s %s: %v", name, what, err)
			}
			if what == "compressible" && len(enc) > len(in)/10 {
				t.Errorf("%s compressed 2,000,000 repetitive bytes only to %d, not even 10:1", name, len(enc))
			}
			out, err := Decode(name, enc, int64(len(in)))
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("%s %s: round trip gave %d bytes, err %v", name, what, len(out), err)
			}
		}
	}
}

// TestDecodeRefusesTheWrongSize: a payload that decodes to more than the size
// the pointer states (a decompression bomb, a forged pointer) or to less is an
// error, for every codec.
func TestDecodeRefusesTheWrongSize(t *testing.T) {
	in := bytes.Repeat([]byte{0}, 1<<20)
	for _, name := range Names {
		enc, _ := Encode(name, in)
		for _, size := range []int64{1000, 1<<20 + 1} {
			if _, err := Decode(name, enc, size); err == nil {
				t.Errorf("%s: decoding %d bytes as %d succeeded", name, len(in), size)
			}
		}
		if _, err := Decode(name, []byte("not compressed at all"), 21); err == nil {
			t.Errorf("%s: garbage decoded", name)
		}
	}
}

func TestUnknownCodec(t *testing.T) {
	_, err := Encode("brotli", []byte("x"))
	if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), `"brotli"`) {
		t.Errorf("Encode: %v", err)
	}
	if _, err := Decode("none", []byte("x"), 1); !errors.Is(err, ErrUnknown) {
		t.Errorf("Decode none: %v (none is not a compression codec to undo)", err)
	}
	if Known("none") || !Known("lz4") {
		t.Error("Known")
	}
}

// TestMostCompressiblePayloadsStillDecode: the bound that refuses impossible
// zstd claims (at most 128 KiB per 4 input bytes) never refuses a real
// payload, even 64 MiB of zeros, encoded whole or streamed.
func TestMostCompressiblePayloadsStillDecode(t *testing.T) {
	zeros := make([]byte, 64<<20)
	whole, _ := Encode(Zstd, zeros)
	var streamed bytes.Buffer
	w, _ := zstd.NewWriter(&streamed, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	w.Write(zeros)
	w.Close()
	for name, enc := range map[string][]byte{"encoded whole": whole, "streamed": streamed.Bytes()} {
		out, err := Decode(Zstd, enc, int64(len(zeros)))
		if err != nil || !bytes.Equal(out, zeros) {
			t.Errorf("64 MiB of zeros %s (%d bytes): %v", name, len(enc), err)
		}
	}
}
