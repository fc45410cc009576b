package fsroot

import (
	"errors"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckPath(t *testing.T) {
	deep := strings.Repeat("d/", 32) + "f" // 33 elements
	ok32 := strings.Repeat("d/", 31) + "f"
	tests := []struct {
		name, in string
		want     string // "" = refused
		reason   string // part of the refusal
	}{
		{"plain", "a.txt", "a.txt", ""},
		{"nested", "data/in/x.csv", "data/in/x.csv", ""},
		{"unicode", "données/é.txt", "données/é.txt", ""},
		{"dots in name", "a..b/.hidden", "a..b/.hidden", ""},
		{"percent not special", "100%/50%41", "100%/50%41", ""},
		{"depth 32", ok32, ok32, ""},
		{"empty", "", "", "empty"},
		{"dotdot", "..", "", `".."`},
		{"dotdot inside", "a/../b", "", `".."`},
		{"dotdot end", "a/..", "", `".."`},
		{"absolute", "/etc/passwd", "", "absolute"},
		{"double slash", "a//b", "", "empty element"},
		{"dot first", "./a", "", `"."`},
		{"dot only", ".", "", `"."`},
		{"trailing slash", "a/", "", "empty element"},
		{"NUL", "a\x00b", "", "control"},
		{"newline", "a\nb", "", "control"},
		{"DEL", "a\x7fb", "", "control"},
		{"C1 control", "a\u0085b", "", "control"},
		{"backslash", `a\b`, "", "backslash"},
		{"backslash dotdot", `..\x`, "", "backslash"},
		{"encoded dotdot", "%2e%2e/x", "", "percent-encoded"},
		{"encoded dotdot upper", "%2E%2E/x", "", "percent-encoded"},
		{"encoded slash", "a%2Fb", "", "percent-encoded"},
		{"encoded slash lower", "a%2fb", "", "percent-encoded"},
		{"encoded backslash", "a%5cb", "", "percent-encoded"},
		{"encoded NUL", "a%00b", "", "percent-encoded"},
		{"double encoded", "%252e%252e/x", "", "percent-encoded"},
		{"invalid utf8", "a\xffb", "", "UTF-8"},
		{"overlong slash", "a\xc0\xafb", "", "UTF-8"},
		{"overlong dot", "\xc0\xae\xc0\xae/x", "", "UTF-8"},
		{"surrogate", "a\xed\xa0\x80", "", "UTF-8"},
		{"too long", strings.Repeat("a/", 2048) + "b", "", "4096"},
		{"name too long", strings.Repeat("n", 256), "", "255"},
		{"depth 33", deep, "", "deep"},
		{"reserved", TempPrefix + "x", "", "reserved"},
		{"reserved nested", "a/" + TempPrefix + "1/b", "", "reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckPath(tt.in, 32)
			if tt.want != "" {
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
				return
			}
			require.Error(t, err)
			require.ErrorIs(t, err, ErrBadPath)
			var pe *PathError
			require.ErrorAs(t, err, &pe)
			require.Contains(t, err.Error(), tt.reason)
			require.Empty(t, got)
		})
	}
}

func TestCheckPathDepthIsALimit(t *testing.T) {
	_, err := CheckPath("a/b/c", 2)
	require.ErrorIs(t, err, ErrBadPath)
	require.ErrorIs(t, err, ErrLimit)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitMaxDepth, le.Limit)
	require.Contains(t, err.Error(), "sessions.max_depth")
}

func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "..", "a/../b", "/x", "a//b", "./a", "%2e%2e/x", "a\\b",
		"\xc0\xaf", "a/./b", "é/ü", TempPrefix + "x", "a/b/", "...", ". /x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := CheckPath(p, 32)
		if err != nil {
			if !errors.Is(err, ErrBadPath) {
				t.Fatalf("refusal of %q does not match ErrBadPath: %v", p, err)
			}
			return
		}
		if got != p {
			t.Fatalf("CheckPath(%q) = %q, want it unchanged", p, got)
		}
		if path.Clean(got) != got || path.IsAbs(got) || !filepath.IsLocal(got) {
			t.Fatalf("accepted %q is not clean, relative and local", got)
		}
		for _, e := range strings.Split(got, "/") {
			if e == ".." || e == "." || e == "" || strings.HasPrefix(e, TempPrefix) {
				t.Fatalf("accepted %q has element %q", got, e)
			}
		}
		root := "/srv/root"
		joined := filepath.Join(root, got)
		if !strings.HasPrefix(joined, root+"/") {
			t.Fatalf("%q joined under %s escapes: %s", got, root, joined)
		}
		if strings.ContainsAny(got, "\\\x00") {
			t.Fatalf("accepted %q holds a backslash or NUL", got)
		}
	})
}
