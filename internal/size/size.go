package size

import (
	"errors"
	"strconv"
	"strings"

	units "github.com/docker/go-units"
)

// MiB is one mebibyte, the unit of a bare number where one is allowed.
const MiB = 1 << 20

var (
	// ErrNoUnit is a bare number where a unit is required.
	ErrNoUnit = errors.New("has no unit")
	// ErrNotSize is anything else that is not a size above zero.
	ErrNotSize = errors.New("is not a size")
	// ErrNotWholeMiB is a size that is not a whole number of MiB.
	ErrNotWholeMiB = errors.New("is not a whole number of MiB")
)

// IsBare reports whether s is a plain number, without a unit or spaces.
func IsBare(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// Parse reads a size with a binary unit, in bytes: k, m, g, t or p in
// either case with an optional b, as go-units reads them (512m, 2GB: both
// binary), and the IEC spellings 512Mi and 2GiB. A bare number is
// ErrNoUnit; zero, negatives and anything unreadable are ErrNotSize.
func Parse(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if IsBare(s) {
		return 0, ErrNoUnit
	}
	// go-units reads 512m and 512mb as binary already; the IEC "i" is
	// the one spelling it lacks.
	if i := strings.IndexAny(s, "iI"); i > 0 && i >= len(s)-2 && strings.ContainsAny(s[i-1:i], "kKmMgGtTpP") {
		s = s[:i] + s[i+1:]
	}
	v, err := units.RAMInBytes(s)
	if err != nil || v <= 0 {
		return 0, ErrNotSize
	}
	return v, nil
}

// ParseMiB reads a size as a whole number of MiB: Parse's grammar, and a
// bare whole number is MiB.
func ParseMiB(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if IsBare(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			if strings.ContainsAny(s, ".eE") {
				return 0, ErrNotWholeMiB
			}
			return 0, ErrNotSize
		}
		if n <= 0 {
			return 0, ErrNotSize
		}
		return n, nil
	}
	b, err := Parse(s)
	if err != nil {
		return 0, err
	}
	if b%MiB != 0 {
		return 0, ErrNotWholeMiB
	}
	return b / MiB, nil
}

// Format prints a size in bytes the way sandboxrun prints every size, as
// go-units does: up to four significant digits and the largest binary
// unit, "128MiB", "1.5GiB". Parse reads it back.
func Format(bytes int64) string { return units.BytesSize(float64(bytes)) }

// FormatMiB is Format of a number of MiB.
func FormatMiB(mib int64) string { return Format(mib * MiB) }
