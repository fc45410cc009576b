package sandbox

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The patterns the loops replaced. They stay here, compiled only by the
// tests, as the specification the loops must agree with.
var (
	specSkillName = regexp.MustCompile(`^[\p{L}\p{N}][\p{L}\p{N}._-]{0,127}$`)
	specRunID     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
)

// Every rune, first and later in a name, is judged as the pattern judges it.
func TestValidSkillNameAgreesWithPatternOnEveryRune(t *testing.T) {
	for r := rune(0); r <= utf8.MaxRune; r++ {
		for _, name := range []string{string(r), "a" + string(r), string(r) + "a"} {
			if specSkillName.MatchString(name) != validSkillName(name) {
				t.Fatalf("%q (U+%04X): pattern %v, loop %v", name, r, specSkillName.MatchString(name), validSkillName(name))
			}
		}
	}
}

func TestValidRunIDAgreesWithPatternOnEveryByte(t *testing.T) {
	for b := range 256 {
		for _, id := range []string{string([]byte{byte(b)}), "a" + string([]byte{byte(b)}), string([]byte{byte(b)}) + "a"} {
			require.Equal(t, specRunID.MatchString(id), validRunID(id), "%q", id)
		}
	}
}

// Lengths, invalid UTF-8 and multi-byte runes at the bounds.
func TestNameCheckersAgreeWithPatterns(t *testing.T) {
	names := []string{"", "a", "é", "技能", "a-b", "a.b_c", "-a", ".a", "_a", "a/b", "..", "a b", "a\x00",
		"\xff", "a\xff", "\xc3", "a\xc3", "é\x80", "٣", "Ⅻ", "a\u200d", "a\u0301", "\U0001F600"}
	for _, n := range []int{63, 64, 65, 127, 128, 129, 200} {
		for _, unit := range []string{"a", "é", "技", "-", "1"} {
			names = append(names, "a"+strings.Repeat(unit, n-1), "a"+strings.Repeat(unit, n))
		}
	}
	for _, name := range names {
		require.Equal(t, specSkillName.MatchString(name), validSkillName(name), "skill %q", name)
		require.Equal(t, specRunID.MatchString(name), validRunID(name), "run id %q", name)
	}
}

// The reason for the loops: importing the package compiles no pattern.
func TestPackageCompilesNoPatternAtInit(t *testing.T) {
	allocs := testing.AllocsPerRun(10, func() {
		_ = validSkillName("café-données") && validRunID("0123456789abcdef")
	})
	require.Zero(t, allocs)
}
