package sandbox

import (
	"time"

	"github.com/sandboxrun/sandboxrun/policy"
)

// goldenSpec is a valid Spec with every field a script sees filled.
func goldenSpec() Spec {
	return Spec{
		RunID:        "0123456789abcdef",
		Skill:        "hello",
		SkillVersion: "1.2.0",
		SkillDir:     "/home/dev/skills/hello",
		Argv:         []string{"python3", "/skills/hello/scripts/echo.py"},
		Runtime:      "python3",
		Env:          map[string]string{"GREETING": "hi", "A_FIRST": "1"},
		Stdin:        []byte(`{"name":"x"}`),
		Image:        "sandboxrun/runner:0.1.0",
		Limits: policy.Limits{
			Timeout:     30 * time.Second,
			MemoryBytes: 512 << 20,
			CPUs:        1,
			Pids:        256,
			OutputBytes: 10 << 20,
			TmpBytes:    64 << 20,
		},
	}
}
