package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
)

// JSON encodes v as indented JSON with every string in it, keys and values,
// redacted before it is encoded: a secret is recognised on its value, never
// on JSON text, where escapes (& as \u0026, say) would hide its shape. The
// encoding keeps v's field order.
func JSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	// Each open object or array, with the tokens written in it so far (an
	// object's keys and values alternate).
	type level struct {
		object bool
		n      int
	}
	var open []level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			open = open[:len(open)-1]
			out.WriteByte(byte(d))
			continue
		}
		if n := len(open); n > 0 {
			top := &open[n-1]
			switch {
			case top.object && top.n%2 == 1:
				out.WriteByte(':')
			case top.n > 0:
				out.WriteByte(',')
			}
			top.n++
		}
		switch t := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(t))
			open = append(open, level{object: t == '{'})
		case string:
			s, _ := json.Marshal(String(t)) // a string always encodes
			out.Write(s)
		case json.Number:
			out.WriteString(t.String())
		case bool:
			out.WriteString(strconv.FormatBool(t))
		case nil:
			out.WriteString("null")
		}
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, out.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	indented.WriteByte('\n')
	return indented.Bytes(), nil
}
