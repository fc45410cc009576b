package sandbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
)

func TestScriptEnv(t *testing.T) {
	spec := goldenSpec()
	env := ScriptEnv(&spec, "9.9.9")
	require.Equal(t, []string{
		"SKILL_NAME=hello",
		"SKILL_VERSION=1.2.0",
		"SKILL_BASE_DIR=/skills/hello",
		"SKILL_DIR=/skills/hello",
		"SCRIPTS_DIR=/skills/hello/scripts",
		"SANDBOXRUN_VERSION=9.9.9",
		"SANDBOXRUN_RUN_ID=0123456789abcdef",
		"PATH=" + scriptPath,
		"HOME=/tmp",
		"LANG=C.UTF-8",
		"A_FIRST=1",
		"GREETING=hi",
	}, env)
	for _, name := range policy.ReservedEnv {
		require.Contains(t, envNames(env), name, "every reserved name is set by sandboxrun")
	}
}

func envNames(env []string) []string {
	var out []string
	for _, kv := range env {
		for i := range len(kv) {
			if kv[i] == '=' {
				out = append(out, kv[:i])
				break
			}
		}
	}
	return out
}

func TestCeilMS(t *testing.T) {
	require.Equal(t, int64(1), ceilMS(time.Microsecond))
	require.Equal(t, int64(2500), ceilMS(2500*time.Millisecond))
	require.Equal(t, int64(0), ceilMS(0))
}
