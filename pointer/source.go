package pointer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// HeaderSource names the source record of every record the pipeline writes:
// "<topic>/<partition>/<offset>" of the raw record it came from, decimal
// (topic names cannot hold a slash). It lets any slim record be traced back
// and a consumer group's position on the raw topic be translated exactly to
// the slim topic (offloader migrate translate-offsets). The pipeline sets it,
// replacing one the source record carried.
const HeaderSource = "offloader-source"

// ErrBadSource: an offloader-source header that is not topic/partition/offset.
var ErrBadSource = errors.New("malformed offloader-source header")

// Source is the value of HeaderSource for a record at these coordinates.
func Source(topic string, partition int32, offset int64) []byte {
	return AppendSource(make([]byte, 0, len(topic)+24), topic, partition, offset)
}

// AppendSource appends the value of HeaderSource for a record at these
// coordinates to b.
func AppendSource(b []byte, topic string, partition int32, offset int64) []byte {
	b = append(b, topic...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(partition), 10)
	b = append(b, '/')
	return strconv.AppendInt(b, offset, 10)
}

// ParseSource reads a HeaderSource value.
func ParseSource(v []byte) (topic string, partition int32, offset int64, err error) {
	s := string(v)
	j := strings.LastIndexByte(s, '/')
	if j < 0 {
		return "", 0, 0, fmt.Errorf("%w: %q", ErrBadSource, cut(s))
	}
	i := strings.LastIndexByte(s[:j], '/')
	if i <= 0 {
		return "", 0, 0, fmt.Errorf("%w: %q", ErrBadSource, cut(s))
	}
	p, perr := strconv.ParseInt(s[i+1:j], 10, 32)
	o, oerr := strconv.ParseInt(s[j+1:], 10, 64)
	if perr != nil || oerr != nil || p < 0 || o < 0 || strings.ContainsAny(s[i+1:], "+-") {
		return "", 0, 0, fmt.Errorf("%w: %q", ErrBadSource, cut(s))
	}
	return s[:i], int32(p), o, nil
}
