package cat

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/offloader/offloader/pipeline"
)

// unescape undoes appendEscaped, as a reader of cat's output would.
func unescape(t *testing.T, s string) []byte {
	t.Helper()
	var out []byte
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case s[i] == '\\' && s[i+1] == 'x':
			b, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				t.Fatalf("bad escape in %q", s)
			}
			out = append(out, byte(b))
			i += 3
		default:
			out = append(out, s[i])
		}
	}
	return out
}

// Keys and headers print escaped and come back byte for byte: text stays
// readable, everything else is \xNN, a backslash is doubled.
func TestEscapingIsReversible(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{[]byte("order-17"), "order-17"},
		{[]byte("café ✓"), "café ✓"},
		{[]byte{0, 0xff, 0xfe, '\n', '\t'}, `\x00\xff\xfe\x0a\x09`},
		{[]byte(`a\x41`), `a\\x41`},
		{[]byte{0xe2, 0x9c}, `\xe2\x9c`},                 // a cut UTF-8 sequence
		{[]byte("\u00ad\u200b"), `\xc2\xad\xe2\x80\x8b`}, // invisible format characters
	} {
		got := string(appendEscaped(nil, tc.in))
		if got != tc.want {
			t.Errorf("escaped %q = %q, want %q", tc.in, got, tc.want)
		}
		if back := unescape(t, got); !bytes.Equal(back, tc.in) {
			t.Errorf("%q came back as %q", tc.in, back)
		}
	}
}

func TestFormatStrings(t *testing.T) {
	for f, ok := range map[string]bool{`%t %p %o %T %k %K %s %S %h %P %%\n`: true, `%x`: false, `50%`: false, `\q`: false, `plain`: true} {
		if _, err := parseFormat(f); (err == nil) != ok {
			t.Errorf("parseFormat(%q) = %v, want ok %v", f, err, ok)
		}
	}
}

// -J writes bytes as kcat does, garbling binary ones; -J --base64 carries
// every byte of a key, header value and payload.
func TestTheKcatEnvelopeInBase64KeepsEveryByte(t *testing.T) {
	binary := []byte{0, 0xff, 0xfe, 'a', 0xc3}
	r := shownRecord{Record: &pipeline.Record{Topic: "t", Partition: 1, Offset: 7, Key: binary,
		Headers: []pipeline.Header{{Key: "h", Value: binary}}}, value: append([]byte("v"), binary...)}
	for format, want := range map[string]bool{"kcat-json": false, "kcat-json-base64": true} {
		var out bytes.Buffer
		p, err := NewPrinter(format, "", &out)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.print(r); err != nil {
			t.Fatal(err)
		}
		var e struct {
			Key, Payload string
			Headers      []string
		}
		if err := json.Unmarshal(out.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		decode := func(s string) []byte {
			if format == "kcat-json" {
				return []byte(s)
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				t.Fatalf("%s: %q is not base64: %v", format, s, err)
			}
			return b
		}
		kept := bytes.Equal(decode(e.Key), binary) && bytes.Equal(decode(e.Payload), r.value) && len(e.Headers) == 2 &&
			e.Headers[0] == "h" && bytes.Equal(decode(e.Headers[1]), binary)
		if kept != want {
			t.Errorf("%s kept the bytes: %v, want %v: %s", format, kept, want, out.String())
		}
	}
}
