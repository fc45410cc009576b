package policy

import (
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
