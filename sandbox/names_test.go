package sandbox

import (
	"regexp"
	"regexp/syntax"
	"sort"
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

// Every rune, first and later in a name, is judged as the pattern judges
// it. The pattern's two character classes are read with Go's own regular
// expression parser and looked up directly: a million matches would take
// most of a minute under the race detector. (Surrogates cannot be in a
// string; both sides refuse them.)
func TestValidSkillNameAgreesWithPatternOnEveryRune(t *testing.T) {
	re, err := syntax.Parse(specSkillName.String(), syntax.Perl)
	require.NoError(t, err)
	var classes [][]rune
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		if r.Op == syntax.OpCharClass {
			classes = append(classes, r.Rune)
		}
		for _, sub := range r.Sub {
			walk(sub)
		}
	}
	walk(re)
	require.Len(t, classes, 2, "first character, then the rest")
	in := func(class []rune, r rune) bool { // sorted, disjoint ranges
		i := sort.Search(len(class)/2, func(i int) bool { return class[2*i+1] >= r })
		return i < len(class)/2 && class[2*i] <= r
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if in(classes[0], r) != skillNameRune(r, true) || in(classes[1], r) != skillNameRune(r, false) {
			t.Fatalf("U+%04X: pattern %v/%v, loop %v/%v", r, in(classes[0], r), in(classes[1], r),
				skillNameRune(r, true), skillNameRune(r, false))
		}
	}
	// And validSkillName applies it per rune as the pattern does.
	for _, r := range []rune{'a', 'Z', '7', 'é', '技', '٣', 'Ⅻ', '.', '_', '-', ' ', '/', 0, utf8.RuneError, 0x10FFFF} {
		for _, name := range []string{string(r), "a" + string(r), string(r) + "a"} {
			require.Equal(t, specSkillName.MatchString(name), validSkillName(name), "%q", name)
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
