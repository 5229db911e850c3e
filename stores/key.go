package stores

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyLength bounds object keys; Azure Blob allows 1,024 characters.
const MaxKeyLength = 1024

// ValidateKey refuses keys that could escape a store's root or that some backend
// cannot store: empty, longer than MaxKeyLength, absolute, with a backslash,
// with empty, "." or ".." segments, or with control characters. Every backend
// calls it before touching storage, and the consumer-side resolver calls it on
// keys read from pointers, which may be forged.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(key) > MaxKeyLength {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidKey, len(key), MaxKeyLength)
	}
	if strings.HasPrefix(key, "/") {
		return fmt.Errorf("%w: %q is absolute", ErrInvalidKey, key)
	}
	if !utf8.ValidString(key) || strings.ContainsRune(key, utf8.RuneError) {
		return fmt.Errorf("%w: %q is not UTF-8 text (or holds U+FFFD)", ErrInvalidKey, key)
	}
	for _, c := range key {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return fmt.Errorf("%w: %q has a control character or backslash", ErrInvalidKey, key)
		}
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q has an empty, \".\" or \"..\" segment", ErrInvalidKey, key)
		}
	}
	return nil
}
