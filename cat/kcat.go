package cat

import (
	"encoding/base64"
	"encoding/json"
	"io"
)

// kcatPrinter prints kcat's JSON envelope (kcat -J), one object per line:
// topic, partition, offset, tstype, ts, broker, headers (present when the
// record has some, as a flat list of name, value, name, value...), key and
// payload, the last two as JSON strings or null. The payload is the resolved
// value. What kcat does not know is left out: the broker is -1 (not known to
// a reader that does not track leaders), and a record that did not resolve
// carries an "error" member with its stored value as the payload.
//
// kcat writes the bytes of a key, header value or payload as a JSON string,
// which garbles binary ones; encode says how they are written here: as kcat
// does (text), or in base64 (base64Text), byte for byte.
type kcatPrinter struct {
	enc    *json.Encoder
	encode func([]byte) *string
}

type kcatEnvelope struct {
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	TSType    string    `json:"tstype"`
	TS        int64     `json:"ts"`
	Broker    int       `json:"broker"`
	Headers   []*string `json:"headers,omitempty"`
	Key       *string   `json:"key"`
	Payload   *string   `json:"payload"`
	Error     string    `json:"error,omitempty"`
}

func newKcatPrinter(out io.Writer, encode func([]byte) *string) *kcatPrinter {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return &kcatPrinter{enc: enc, encode: encode}
}

func (p *kcatPrinter) print(r shownRecord) error {
	e := kcatEnvelope{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, TSType: "create",
		TS: r.Timestamp.UnixMilli(), Broker: -1, Key: p.encode(r.Key), Payload: p.encode(r.value)}
	for _, h := range r.Headers {
		e.Headers = append(e.Headers, text([]byte(h.Key)), p.encode(h.Value))
	}
	if r.err != nil {
		e.Error = r.err.Error()
	}
	return p.enc.Encode(e)
}

// text is b as kcat writes it in JSON: its bytes as a string (a byte that is
// not UTF-8 becomes U+FFFD, as kcat's JSON output also cannot carry it), or
// null.
func text(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// base64Text is b in standard, padded base64, or null.
func base64Text(b []byte) *string {
	if b == nil {
		return nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s
}
