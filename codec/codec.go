// Package codec compresses and decompresses payloads by name: the codecs a
// pointer's "codec" field and the compress_inline header may name. Each is a
// standard, self-contained format that other languages read with common
// libraries:
//
//	zstd    a Zstandard frame (RFC 8878)
//	gzip    a gzip member (RFC 1952)
//	lz4     an LZ4 frame (the LZ4 frame format, not a raw block)
//	snappy  a Snappy block (the raw block format, not the framing format)
//
// Decoding is bounded: the caller states the decoded size it expects (from a
// pointer or a header), and more output than that is an error, not an
// allocation, so a forged or corrupt payload cannot exhaust memory. Memory
// follows the bytes a payload really decodes to, not the size it claims.
package codec

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec names.
const (
	None   = "none"
	Zstd   = "zstd"
	Gzip   = "gzip"
	LZ4    = "lz4"
	Snappy = "snappy"
)

// Names lists the codecs that compress, in the order the docs list them.
var Names = []string{Zstd, Gzip, LZ4, Snappy}

// ErrUnknown is returned for a codec name this package does not know.
var ErrUnknown = errors.New("unknown codec")

// ErrCorrupt is returned by Decode when the input does not decode, or decodes to
// more or fewer bytes than expected.
var ErrCorrupt = errors.New("payload does not decode to the expected bytes")

// Known reports whether name is a codec that compresses (not "none").
func Known(name string) bool {
	for _, n := range Names {
		if n == name {
			return true
		}
	}
	return false
}

var (
	zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
)

// Encode compresses src with the named codec.
func Encode(name string, src []byte) ([]byte, error) {
	switch name {
	case Zstd:
		return zstdEncoder.EncodeAll(src, make([]byte, 0, len(src)/2)), nil
	case Gzip:
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case LZ4:
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case Snappy:
		return snappy.Encode(nil, src), nil
	}
	return nil, fmt.Errorf("%w %q (known: none, zstd, gzip, lz4, snappy)", ErrUnknown, name)
}

// Decode decompresses src, which must decode to exactly size bytes. Every
// failure wraps ErrUnknown or ErrCorrupt.
func Decode(name string, src []byte, size int64) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: codec %s: negative expected size %d", ErrCorrupt, name, size)
	}
	var r io.Reader
	switch name {
	case Zstd:
		// The decoder allocates the window its frame header names before it
		// produces anything, so refuse first what cannot be: a frame that
		// declares another size, or more output than the input could hold.
		if h := (zstd.Header{}); h.Decode(src) == nil && h.HasFCS && h.FrameContentSize != uint64(size) {
			return nil, fmt.Errorf("%w: codec zstd: frame holds %d bytes, expected %d", ErrCorrupt, h.FrameContentSize, size)
		}
		if most := zstdMaxOutput(len(src)); size > most {
			return nil, fmt.Errorf("%w: codec zstd: %d bytes cannot decode to %d (at most %d)", ErrCorrupt, len(src), size, most)
		}
		dec, err := zstd.NewReader(bytes.NewReader(src), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(size)+1<<20))
		if err != nil {
			return nil, fmt.Errorf("%w: codec zstd: %v", ErrCorrupt, err)
		}
		defer dec.Close()
		r = dec
	case Gzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("%w: codec gzip: %v", ErrCorrupt, err)
		}
		r = zr
	case LZ4:
		r = lz4.NewReader(bytes.NewReader(src))
	case Snappy:
		n, err := snappy.DecodedLen(src)
		if err != nil {
			return nil, fmt.Errorf("%w: codec snappy: %v", ErrCorrupt, err)
		}
		if int64(n) != size {
			return nil, fmt.Errorf("%w: codec snappy: block holds %d bytes, expected %d", ErrCorrupt, n, size)
		}
		out, err := snappy.Decode(nil, src)
		if err != nil {
			return nil, fmt.Errorf("%w: codec snappy: %v", ErrCorrupt, err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w %q (known: none, zstd, gzip, lz4, snappy)", ErrUnknown, name)
	}
	out, err := readBounded(r, len(src), size)
	if err != nil {
		return nil, fmt.Errorf("%w: codec %s: %v", ErrCorrupt, name, err)
	}
	return out, nil
}

// zstdMaxOutput is the most a Zstandard payload of n bytes can decode to
// (RFC 8878): every block takes at least 4 bytes (a 3-byte header and one of
// content, as an RLE block) and yields at most 128 KiB.
func zstdMaxOutput(n int) int64 {
	return (int64(n)/4 + 1) * (128 << 10)
}

// readBounded reads exactly size bytes from r, the decoder of srcLen input
// bytes. It starts from a buffer fit for a generous compression ratio, not the
// claimed size, and grows it fourfold as output arrives (so what it allocates
// stays within a small factor of what the input really decodes to), never
// past size+1 bytes (the one more that shows the output is too long).
func readBounded(r io.Reader, srcLen int, size int64) ([]byte, error) {
	buf := make([]byte, 0, min(size+1, max(int64(srcLen)*8, 64<<10)))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > size {
				break
			}
			grown := make([]byte, len(buf), min(size+1, 4*int64(cap(buf))))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(buf)) != size {
		if int64(len(buf)) > size {
			return nil, fmt.Errorf("decodes to more than the %d bytes expected", size)
		}
		return nil, fmt.Errorf("decodes to %d bytes, %d expected", len(buf), size)
	}
	return buf, nil
}
