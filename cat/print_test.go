package cat

import (
	"bytes"
	"strconv"
	"testing"
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
