package where_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// caller names the folders of a made-up server as a remote caller is told
// them, and anything else as a file of the server.
func caller(host string) string {
	switch {
	case host == "/srv/skills/hello" || strings.HasPrefix(host, "/srv/skills/hello/"):
		return "/skills/hello" + strings.TrimPrefix(host, "/srv/skills/hello")
	case host == "/etc/sandboxrun/policy.yaml":
		return "operator policy"
	}
	return "a file of the server"
}

var errSentinel = errors.New("refused")

func TestErrorReaders(t *testing.T) {
	inner := where.Errorf("%w: %s line %d", errSentinel, where.Path("/etc/sandboxrun/policy.yaml"), 4)
	outer := fmt.Errorf("running %q: %w", "x.py", inner)
	tests := []struct {
		name           string
		err            error
		operator, told string
	}{
		{"a path", where.Errorf("reading %s", where.Path("/srv/skills/hello/SKILL.md")),
			"reading /srv/skills/hello/SKILL.md", "reading /skills/hello/SKILL.md"},
		{"a quoted path", where.Errorf("folder %q", where.Path("/srv/skills/hello")),
			`folder "/srv/skills/hello"`, `folder "/skills/hello"`},
		{"wrapped by fmt", outer,
			`running "x.py": refused: /etc/sandboxrun/policy.yaml line 4`, `running "x.py": refused: operator policy line 4`},
		{"a percent sign", where.Errorf("100%%w of %s", where.Path("/srv/x")), "100%w of /srv/x", "100%w of a file of the server"},
		{"a text quoted", where.Errorf("limit (%s)", where.Sprintf("%s line %d", where.Path("/etc/sandboxrun/policy.yaml"), 2)),
			"limit (/etc/sandboxrun/policy.yaml line 2)", "limit (operator policy line 2)"},
		{"joined", errors.Join(where.Errorf("a %s", where.Path("/srv/skills/hello/a")), errors.New("b")),
			"a /srv/skills/hello/a\nb", "a /skills/hello/a\nb"},
		{"a plain error", errors.New("no path here"), "no path here", "no path here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.operator, tt.err.Error())
			require.Equal(t, tt.operator, where.Render(tt.err, where.Operator))
			require.Equal(t, tt.told, where.Render(tt.err, caller))
		})
	}
	require.ErrorIs(t, outer, errSentinel, "%w still wraps")
	require.Nil(t, errors.Unwrap(where.Errorf("no %s", "wrap")))
	require.Empty(t, where.Render(nil, caller))
}

// Advice for the operator is the operator's alone: every other reader is
// told what stands in its place, in an error and in a text, wrapped or not.
func TestForOperator(t *testing.T) {
	hint := where.ForOperator{Operator: "pass --skills DIR", Others: "list the skills with GET /v1/skills"}
	err := where.Errorf("no skill %q in %s; %s", "x", where.Path("/srv/skills/hello"), hint)
	wrapped := fmt.Errorf("refused: %w", err)
	text := where.Sprintf("%s", hint)
	require.Equal(t, `no skill "x" in /srv/skills/hello; pass --skills DIR`, err.Error())
	require.Equal(t, err.Error(), where.Render(err, where.Operator))
	require.Equal(t, `refused: no skill "x" in /skills/hello; list the skills with GET /v1/skills`, where.Render(wrapped, caller))
	require.Equal(t, "pass --skills DIR", text.String())
	require.Equal(t, "list the skills with GET /v1/skills", text.Render(caller))
	require.Equal(t, "pass --skills DIR", fmt.Sprint(hint))
}

// A path error from the file system names its file through the Namer, as
// deep in a chain as it is.
func TestRenderPathError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := os.Open(missing)
	require.Error(t, err)
	wrapped := fmt.Errorf("loading skill: %w", where.Errorf("reading %s: %w", where.Path(missing), err))
	told := where.Render(wrapped, caller)
	require.NotContains(t, told, missing)
	require.Equal(t, "loading skill: reading a file of the server: open a file of the server: no such file or directory", told)
	require.ErrorIs(t, wrapped, os.ErrNotExist)

	link := &os.LinkError{Op: "rename", Old: "/srv/a", New: "/srv/skills/hello/b", Err: os.ErrExist}
	require.Equal(t, "rename a file of the server /skills/hello/b: file already exists", where.Render(link, caller))
}

// A Text encodes as the operator's string and decodes as plain text.
func TestTextJSON(t *testing.T) {
	m := map[string]where.Text{"timeout": where.Sprintf("policy (%s line %d)", where.Path("/etc/sandboxrun/policy.yaml"), 2)}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.JSONEq(t, `{"timeout":"policy (/etc/sandboxrun/policy.yaml line 2)"}`, string(b))
	var back map[string]where.Text
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, m["timeout"].String(), back["timeout"].String())
	require.Equal(t, "policy (/etc/sandboxrun/policy.yaml line 2)", back["timeout"].Render(caller), "decoded text holds no paths")
	require.True(t, where.Text{}.IsZero())
	require.Empty(t, where.Text{}.String())
	require.Equal(t, "50%", where.Plain("50%").String())
}

// The operator's message is what fmt.Errorf writes for the same format and
// values, and so is the message rendered for the operator, for any format
// fmt accepts (explicit argument indexes aside, whose malformed forms fmt
// reads its own way).
func FuzzErrorfAgreesWithFmt(f *testing.F) {
	for _, s := range []string{"%s: %w", "%q %v %d", "%%w %s", "%[2]s %[1]w", "%w", "%10s|%-4q", "%x %X"} {
		f.Add(s, "/srv/x", "inner")
	}
	f.Fuzz(func(t *testing.T, format, path, msg string) {
		inner := errors.New(msg)
		want := fmt.Errorf(format, path, inner).Error() //nolint:err113 // the fuzzer's format
		if strings.Contains(want, "%!") || strings.ContainsAny(format, "[Tp#") {
			return // a format fmt itself rejects
		}
		got := where.Errorf(format, where.Path(path), inner)
		require.Equal(t, want, got.Error())
		require.Equal(t, want, where.Render(got, where.Operator))
		require.Equal(t, errors.Is(fmt.Errorf(format, path, inner), inner), errors.Is(got, inner)) //nolint:err113 // the fuzzer's format
	})
}
