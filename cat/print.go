package cat

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
)

// shownRecord is a record as cat prints it: the record read, its value
// (resolved, or as stored), and what resolving said.
type shownRecord struct {
	*pipeline.Record
	value   []byte
	pointer *pointer.Pointer
	codec   string
	err     error
	// file is where the value was written instead of being printed ("": it
	// is printed).
	file string
	// meta: the value is not printed at all (--meta).
	meta bool
	// envelope is the dead-letter record a whole record was unpacked from
	// (nil: the record is shown as read): its coordinates and headers (the
	// failure's context) stay beside the original's key, value and headers.
	envelope *pipeline.Record
	original *pointer.Record // the unpacked record's own coordinates
}

// unpack turns a whole-record dead-letter entry (its pointer marked
// offloader-record: v1, its payload the record) into the record it stands
// for, keeping the dead-letter record as its envelope.
func (r *shownRecord) unpack() error {
	if v, ok := r.Header(pointer.HeaderRecord); !ok || string(v) != "v1" {
		return nil
	}
	orig, err := pointer.DecodeRecord(r.value)
	if err != nil {
		return err
	}
	envelope := r.Record
	rec := &pipeline.Record{Topic: envelope.Topic, Partition: envelope.Partition, Offset: envelope.Offset,
		Timestamp: envelope.Timestamp, Key: orig.Key}
	for _, h := range orig.Headers {
		rec.Headers = append(rec.Headers, pipeline.Header{Key: string(h.Key), Value: h.Value})
	}
	r.Record, r.value, r.envelope = rec, orig.Value, envelope
	r.original = &orig
	return nil
}

// size is the value's size: the resolved value's, or under --meta the one
// the pointer claims.
func (r shownRecord) size() int {
	if r.meta && r.pointer != nil {
		return int(r.pointer.Size)
	}
	return len(r.value)
}

// Printer prints one record as a format says.
type Printer interface {
	print(r shownRecord) error
}

// NewPrinter prints to out with the kcat format string fmtString, or, without
// one, as format says: "raw" (values alone), "kcat-json" (kcat -J's
// envelope), "kcat-json-base64" (the envelope with its bytes in base64),
// else JSON lines.
func NewPrinter(format, fmtString string, out io.Writer) (Printer, error) {
	if fmtString != "" {
		tokens, err := parseFormat(fmtString)
		return &formatPrinter{out: out, tokens: tokens}, err
	}
	switch format {
	case "raw":
		return &rawPrinter{out: out}, nil
	case "kcat-json":
		return newKcatPrinter(out, text), nil
	case "kcat-json-base64":
		return newKcatPrinter(out, base64Text), nil
	}
	return &jsonPrinter{enc: json.NewEncoder(out)}, nil
}

// spill writes a value over inlineMax or not UTF-8 to a file in the
// payload directory, and returns its path ("" for a value printed in place).
func (o Options) spill(topic string, partition int32, offset int64, value []byte) (string, error) {
	if value == nil || len(value) <= o.InlineMax && utf8.Valid(value) {
		return "", nil
	}
	path := filepath.Join(o.PayloadDir, fmt.Sprintf("%s-%d-%d", topic, partition, offset))
	return path, os.WriteFile(path, value, 0o640)
}

// jsonPrinter prints a JSON object per record.
type jsonPrinter struct{ enc *json.Encoder }

type catRecord struct {
	Topic         string           `json:"topic"`
	Partition     int32            `json:"partition"`
	Offset        int64            `json:"offset"`
	Timestamp     int64            `json:"timestamp"`
	Key           *string          `json:"key"`
	KeyEncoding   string           `json:"key_encoding,omitempty"`
	Headers       []catHeader      `json:"headers"`
	Value         *string          `json:"value"`
	ValueEncoding string           `json:"value_encoding,omitempty"`
	ValueFile     string           `json:"value_file,omitempty"`
	Size          int              `json:"size"`
	SHA256        string           `json:"sha256,omitempty"`
	Pointer       *pointer.Pointer `json:"pointer,omitempty"`
	Codec         string           `json:"inline_codec,omitempty"`
	// Error says why the value could not be resolved; Value is then the
	// stored one.
	Error string `json:"error,omitempty"`
	// DeadLetter, for a whole-record dead-letter entry, is where the record
	// came from and the dead-letter record's own headers (the failure's
	// context); key, value and headers above are the original record's.
	DeadLetter *catDeadLetter `json:"dead_letter,omitempty"`
}

// catDeadLetter is the context of an unpacked whole-record dead-letter entry.
type catDeadLetter struct {
	Topic     string      `json:"original_topic"`
	Partition int32       `json:"original_partition"`
	Offset    int64       `json:"original_offset"`
	Timestamp int64       `json:"original_timestamp"`
	Headers   []catHeader `json:"headers"`
}

type catHeader struct {
	Key           string  `json:"key"`
	KeyEncoding   string  `json:"key_encoding,omitempty"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding,omitempty"`
}

// jsonBytes is b as a JSON string member: the text when it is UTF-8,
// otherwise base64 with the encoding named, so no byte is lost.
func jsonBytes(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, "base64"
}

func (p *jsonPrinter) print(r shownRecord) error {
	rec := catRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		Timestamp: r.Timestamp.UnixMilli(), Size: r.size(), Pointer: r.pointer, Codec: r.codec,
		Headers: []catHeader{}, ValueFile: r.file}
	rec.Key, rec.KeyEncoding = jsonBytes(r.Key)
	rec.Headers = jsonHeaders(r.Headers)
	if r.envelope != nil {
		rec.DeadLetter = &catDeadLetter{Topic: r.original.Topic, Partition: r.original.Partition, Offset: r.original.Offset,
			Timestamp: r.original.Timestamp, Headers: jsonHeaders(r.envelope.Headers)}
	}
	if r.err != nil {
		rec.Error = r.err.Error()
	}
	if !r.meta && r.value != nil {
		sum := sha256.Sum256(r.value)
		rec.SHA256 = hex.EncodeToString(sum[:])
		if r.file == "" {
			rec.Value, rec.ValueEncoding = jsonBytes(r.value)
		}
	}
	return p.enc.Encode(rec)
}

// jsonHeaders are headers as cat's JSON prints them.
func jsonHeaders(headers []pipeline.Header) []catHeader {
	out := []catHeader{}
	for _, h := range headers {
		key, keyEnc := jsonBytes([]byte(h.Key))
		v, enc := jsonBytes(h.Value)
		out = append(out, catHeader{Key: *key, KeyEncoding: keyEnc, Value: v, ValueEncoding: enc})
	}
	return out
}

// rawPrinter prints the values alone. A record that did not resolve is left
// out (its error is on stderr).
type rawPrinter struct{ out io.Writer }

func (p *rawPrinter) print(r shownRecord) error {
	if r.err != nil {
		return nil
	}
	var err error
	if r.file != "" {
		_, err = fmt.Fprintf(p.out, "[%d bytes in %s]\n", len(r.value), r.file)
	} else {
		_, err = fmt.Fprintf(p.out, "%s\n", r.value)
	}
	return err
}

// formatPrinter prints kcat's format strings.
type formatPrinter struct {
	out    io.Writer
	tokens []formatToken
}

// formatToken is literal text, or a field (the letter after %).
type formatToken struct {
	text  string
	field byte
}

// parseFormat compiles a kcat-style format string.
func parseFormat(f string) ([]formatToken, error) {
	var tokens []formatToken
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			tokens = append(tokens, formatToken{text: text.String()})
			text.Reset()
		}
	}
	for i := 0; i < len(f); i++ {
		switch c := f[i]; {
		case c == '\\' && i+1 < len(f):
			i++
			esc, ok := map[byte]string{'n': "\n", 't': "\t", 'r': "\r", '\\': "\\"}[f[i]]
			if !ok {
				return nil, fmt.Errorf(`unknown escape \%c (known: \n \t \r \\)`, f[i])
			}
			text.WriteString(esc)
		case c == '%' && i+1 < len(f):
			i++
			switch f[i] {
			case '%':
				text.WriteByte('%')
			case 't', 'p', 'o', 'T', 'k', 'K', 's', 'S', 'h', 'P':
				flush()
				tokens = append(tokens, formatToken{field: f[i]})
			default:
				return nil, fmt.Errorf("unknown field %%%c (known: %%t %%p %%o %%T %%k %%K %%s %%S %%h %%P %%%%)", f[i])
			}
		case c == '%':
			return nil, fmt.Errorf("a lone %% at the end: write %%%% for a percent sign")
		default:
			text.WriteByte(c)
		}
	}
	flush()
	return tokens, nil
}

func (p *formatPrinter) print(r shownRecord) error {
	var b []byte
	for _, t := range p.tokens {
		switch t.field {
		case 0:
			b = append(b, t.text...)
		case 't':
			b = append(b, r.Topic...)
		case 'p':
			b = strconv.AppendInt(b, int64(r.Partition), 10)
		case 'o':
			b = strconv.AppendInt(b, r.Offset, 10)
		case 'T':
			b = strconv.AppendInt(b, r.Timestamp.UnixMilli(), 10)
		case 'k':
			b = appendEscaped(b, r.Key)
		case 'K':
			b = strconv.AppendInt(b, int64(lengthOf(r.Key)), 10)
		case 's':
			switch {
			case r.err != nil:
				b = append(b, "[error: "...)
				b = append(b, r.err.Error()...)
				b = append(b, ']')
			case r.file != "":
				b = fmt.Appendf(b, "[%d bytes in %s]", len(r.value), r.file)
			default:
				b = append(b, r.value...)
			}
		case 'S':
			size := r.size()
			if r.value == nil && r.pointer == nil {
				size = -1 // a tombstone, as kcat shows it
			}
			b = strconv.AppendInt(b, int64(size), 10)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendEscaped(b, []byte(h.Key))
				b = append(b, '=')
				b = appendEscaped(b, h.Value)
			}
		case 'P':
			if r.pointer != nil {
				b = append(b, r.pointer.Store+"/"+r.pointer.Key...)
			}
		}
	}
	_, err := p.out.Write(b)
	return err
}

func lengthOf(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// appendEscaped appends b readably and reversibly: printable text as it is,
// a backslash as \\, and every other byte (control characters, bytes that
// are not UTF-8) as \xNN.
func appendEscaped(dst, b []byte) []byte {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == '\\':
			dst = append(dst, `\\`...)
		case r == utf8.RuneError && n <= 1, !unicode.IsPrint(r):
			for _, c := range b[:n] {
				dst = fmt.Appendf(dst, `\x%02x`, c)
			}
		default:
			dst = append(dst, b[:n]...)
		}
		b = b[n:]
	}
	return dst
}
