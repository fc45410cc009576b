package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want error
		msg  string
	}{
		{"nil", nil, nil, ""},
		{"ordinary names", map[string]string{"INPUT": "x", "_private": "", "a1": "y", "SKILL_INPUT": "z"}, nil, ""},
		{"SKILL_NAME", map[string]string{"SKILL_NAME": "x"}, ErrReservedEnv, "SKILL_NAME is set by sandboxrun"},
		{"SKILL_VERSION", map[string]string{"SKILL_VERSION": "x"}, ErrReservedEnv, "SKILL_VERSION"},
		{"SKILL_BASE_DIR", map[string]string{"SKILL_BASE_DIR": "x"}, ErrReservedEnv, "SKILL_BASE_DIR"},
		{"SKILL_DIR", map[string]string{"SKILL_DIR": "x"}, ErrReservedEnv, "SKILL_DIR"},
		{"SCRIPTS_DIR", map[string]string{"SCRIPTS_DIR": "x"}, ErrReservedEnv, "SCRIPTS_DIR"},
		{"SANDBOXRUN_VERSION", map[string]string{"SANDBOXRUN_VERSION": "x"}, ErrReservedEnv, "SANDBOXRUN_VERSION"},
		{"SANDBOXRUN_RUN_ID", map[string]string{"SANDBOXRUN_RUN_ID": "x"}, ErrReservedEnv, "SANDBOXRUN_RUN_ID"},
		{"SANDBOXRUN prefix", map[string]string{"SANDBOXRUN_ANYTHING": "x"}, ErrReservedEnv, "SANDBOXRUN_ANYTHING"},
		{"PATH", map[string]string{"PATH": "/bin"}, ErrReservedEnv, "PATH"},
		{"HOME", map[string]string{"HOME": "/root"}, ErrReservedEnv, "HOME"},
		{"LANG", map[string]string{"LANG": "C"}, ErrReservedEnv, "LANG"},
		{"empty name", map[string]string{"": "x"}, ErrInvalidEnv, `name ""`},
		{"digit first", map[string]string{"1A": "x"}, ErrInvalidEnv, `name "1A"`},
		{"dash", map[string]string{"MY-VAR": "x"}, ErrInvalidEnv, "MY-VAR"},
		{"equals", map[string]string{"A=B": "x"}, ErrInvalidEnv, "A=B"},
		{"space", map[string]string{"A B": "x"}, ErrInvalidEnv, "A B"},
		{"unicode", map[string]string{"CAFÉ": "x"}, ErrInvalidEnv, "CAFÉ"},
		{"nul in value", map[string]string{"A": "x\x00y"}, ErrInvalidEnv, "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckEnv(tt.env)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			require.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestCheckEnvReportsAll(t *testing.T) {
	err := CheckEnv(map[string]string{"PATH": "x", "1A": "y", "OK": "z"})
	require.ErrorIs(t, err, ErrReservedEnv)
	require.ErrorIs(t, err, ErrInvalidEnv)
	require.NotContains(t, err.Error(), "OK")
}

func TestReservedEnvIsACopy(t *testing.T) {
	saved := ReservedEnv[0]
	ReservedEnv[0] = "CHANGED"
	t.Cleanup(func() { ReservedEnv[0] = saved })
	require.True(t, IsReservedEnv(saved), "editing the exported list must not weaken the rule")
	require.False(t, IsReservedEnv("CHANGED"))
}

func TestCheckEnvRefusesCodeLoadingVariables(t *testing.T) {
	for _, name := range []string{
		"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "IFS",
		"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PYTHONSTARTUP", "PYTHONPATH",
		"PYTHONHOME", "PYTHONINSPECT", "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB",
		"GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_CONFIG_COUNT",
		"GIT_CONFIG_KEY_0", "GIT_EXEC_PATH", "PAGER", "EDITOR", "VISUAL", "BROWSER",
		"BASH_FUNC_ls", "GLIBC_TUNABLES",
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckEnv(map[string]string{name: "/workspace/x.sh"})
			require.ErrorIs(t, err, ErrCodeLoadingEnv)
			require.ErrorContains(t, err, name+" ")
			require.ErrorContains(t, err, "pass the value as an argument")
		})
	}
	// Names that merely resemble listed ones stay allowed.
	require.NoError(t, CheckEnv(map[string]string{"MY_ENV": "x", "ENVIRONMENT": "prod", "GITHUB_TOKEN_HINT": "x", "NODE": "x", "PYTHON_VERSION": "3"}))
}

func TestCodeLoadingEnvEntriesAreNames(t *testing.T) {
	for _, e := range CodeLoadingEnv {
		name, _ := strings.CutSuffix(e.Name, "*")
		require.True(t, validEnvName(name), e.Name)
		require.NotEmpty(t, e.Reason, e.Name)
		require.Equal(t, e.Reason, codeLoadingReason(name+"X"[:len(e.Name)-len(name)]), e.Name)
	}
}
