package settings

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Size is a byte count. In YAML it is a plain number of bytes or a number with a
// unit: B, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (powers of 1000).
type Size int64

// Common sizes.
const (
	KiB Size = 1 << 10
	MiB Size = 1 << 20
	GiB Size = 1 << 30
)

// MaxSize is the largest size a setting takes (1 PiB): far above any that
// offloader can use, and far below where byte arithmetic overflows.
const MaxSize Size = 1 << 50

var sizeUnits = []struct {
	suffix string
	factor float64
}{
	// Longest suffixes first so that "KiB" is not read as "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
	{"B", 1},
}

// ParseSize reads "65536", "64KiB", "1.5MiB" or "10MB".
func ParseSize(s string) (Size, error) {
	text := strings.TrimSpace(s)
	factor := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(text, u.suffix) {
			text, factor = strings.TrimSpace(strings.TrimSuffix(text, u.suffix)), u.factor
			break
		}
	}
	n, err := strconv.ParseFloat(text, 64)
	if err != nil || n < 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, fmt.Errorf("must be a size such as 65536, 64KiB or 1MiB, got %q", s)
	}
	bytes := n * factor
	if bytes > float64(MaxSize) {
		return 0, fmt.Errorf("must be at most 1PiB, got %q", s)
	}
	if bytes != math.Trunc(bytes) {
		return 0, fmt.Errorf("must be a whole number of bytes, got %q", s)
	}
	return Size(bytes), nil
}

// String prints the size with the largest binary unit that divides it exactly.
func (s Size) String() string {
	switch {
	case s != 0 && s%GiB == 0:
		return fmt.Sprintf("%dGiB", s/GiB)
	case s != 0 && s%MiB == 0:
		return fmt.Sprintf("%dMiB", s/MiB)
	case s != 0 && s%KiB == 0:
		return fmt.Sprintf("%dKiB", s/KiB)
	}
	return fmt.Sprintf("%dB", int64(s))
}

// Approx is the size for people, to a tenth of its unit: 4.2 MiB, 900 B.
func (s Size) Approx() string {
	switch {
	case s >= GiB:
		return fmt.Sprintf("%.1f GiB", float64(s)/float64(GiB))
	case s >= MiB:
		return fmt.Sprintf("%.1f MiB", float64(s)/float64(MiB))
	case s >= KiB:
		return fmt.Sprintf("%.1f KiB", float64(s)/float64(KiB))
	}
	return fmt.Sprintf("%d B", int64(s))
}

// SizeOrAuto is a Size, or "auto" (Auto): a size its user derives from other
// figures. In YAML: a size as Size reads it, or the word auto.
type SizeOrAuto Size

// Auto is the SizeOrAuto written "auto".
const Auto SizeOrAuto = -1

// IsAuto reports whether s is "auto".
func (s SizeOrAuto) IsAuto() bool { return s == Auto }

// String prints "auto" or the size.
func (s SizeOrAuto) String() string {
	if s.IsAuto() {
		return "auto"
	}
	return Size(s).String()
}
