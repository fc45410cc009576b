package size

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"512m": 512 << 20, "512M": 512 << 20, "512Mi": 512 << 20, "512MiB": 512 << 20, "512mb": 512 << 20,
		"2g": 2 << 30, "2GiB": 2 << 30, "1.5g": 3 << 29, "64k": 64 << 10, " 1t ": 1 << 40, "256 m": 256 << 20,
	} {
		got, err := Parse(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"512", "0", "1.5", "-3"} {
		_, err := Parse(in)
		require.ErrorIs(t, err, ErrNoUnit, in)
	}
	for _, in := range []string{"", "m", "0m", "-1g", "1Xi", "lots"} {
		_, err := Parse(in)
		require.ErrorIs(t, err, ErrNotSize, in)
	}
}

func TestParseMiB(t *testing.T) {
	for in, want := range map[string]int64{"256": 256, " 256 ": 256, "256m": 256, "1g": 1024, "1.5GiB": 1536, "1t": 1 << 20} {
		got, err := ParseMiB(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for in, want := range map[string]error{
		"256k": ErrNotWholeMiB, "1.5": ErrNotWholeMiB, "1e3": ErrNotWholeMiB, "1.0000001g": ErrNotWholeMiB,
		"0": ErrNotSize, "-1": ErrNotSize, "abc": ErrNotSize, "99999999999999999999": ErrNotSize,
	} {
		_, err := ParseMiB(in)
		require.ErrorIs(t, err, want, in)
	}
}

func TestFormat(t *testing.T) {
	for in, want := range map[int64]string{
		0: "0B", 512: "512B", 16 << 20: "16MiB", 128 << 20: "128MiB", 1536 << 20: "1.5GiB", 4 << 30: "4GiB",
	} {
		require.Equal(t, want, Format(in), in)
	}
	require.Equal(t, "16MiB", FormatMiB(16))
}

// What Format prints, Parse reads back.
func FuzzFormatParses(f *testing.F) {
	for _, n := range []int64{1, 1 << 20, 3 << 29, 1 << 40} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		if n <= 0 || n > 1<<50 || n%MiB != 0 {
			return
		}
		s := Format(n)
		got, err := Parse(s)
		require.NoError(t, err, s)
		// Four significant digits: within 0.1% of n.
		require.InDelta(t, float64(n), float64(got), float64(n)/1000, s)
	})
}
