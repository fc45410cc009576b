package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckArgv(t *testing.T) {
	many := make([]string, MaxArgvCount+1)
	for i := range many {
		many[i] = "x"
	}
	// 3 arguments just under the per-argument cap exceed the total.
	big := strings.Repeat("a", MaxArgBytes)
	tests := []struct {
		name string
		argv []string
		want string // "" means accepted
	}{
		{"none", nil, ""},
		{"plain", []string{"--input", "data.csv", "--top", "3"}, ""},
		{"shell text stays data", []string{"$(id)", "; rm -rf /", "a b", "'\"", "*"}, ""},
		{"empty argument", []string{""}, ""},
		{"unicode", []string{"données.csv", "数据"}, ""},
		{"one at the cap", []string{big}, ""},
		{"NUL", []string{"ok", "a\x00b"}, "argument 2 contains a NUL byte"},
		{"invalid UTF-8", []string{"\xff"}, "argument 1 is not valid UTF-8"},
		{"one over the cap", []string{big + "a"}, "over the 131071-byte limit of one argument"},
		{"total over the cap", []string{big, big, big}, "over the 256 KiB limit"},
		{"too many", many, "4097 arguments, over the limit of 4096"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckArgv(tt.argv)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrBadArgv)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestParseWorkDir(t *testing.T) {
	for in, want := range map[string]WorkDir{"": WorkDirWorkspace, "workspace": WorkDirWorkspace, "skill": WorkDirSkill} {
		got, err := ParseWorkDir(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	for _, bad := range []string{"Skill", "/tmp", "scripts", "skills"} {
		_, err := ParseWorkDir(bad)
		require.ErrorIs(t, err, ErrBadWorkDir)
		require.ErrorContains(t, err, `use "workspace"`)
	}
	require.Equal(t, "/workspace", WorkDirWorkspace.SandboxPath("pdf"))
	require.Equal(t, "/skills/pdf", WorkDirSkill.SandboxPath("pdf"))
}
