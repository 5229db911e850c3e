package stores

import (
	"fmt"
	"io"
)

// ReadExactly reads a body that its sender said holds size bytes: it reads
// one byte more than that, so that a longer body is told apart, and fails
// on a shorter one. The caller has checked size against its limit.
func ReadExactly(body io.Reader, size int64) ([]byte, error) {
	buf := make([]byte, size+1)
	n, err := io.ReadFull(body, buf)
	switch {
	case err != nil && err != io.ErrUnexpectedEOF && err != io.EOF: // EOF: an empty body
		return nil, err
	case int64(n) != size:
		return nil, fmt.Errorf("the body held %d bytes or more, its length said %d", n, size)
	}
	return buf[:n], nil
}
