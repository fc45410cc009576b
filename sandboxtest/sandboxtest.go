package sandboxtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Env is the backend under test and how a case gets what it mounts.
type Env struct {
	// Runner is the backend under test; required.
	Runner sandbox.Runner
	// SkillDir writes a skill folder holding files (relative path to
	// content) and returns it as Spec.SkillDir takes it. Default: a folder
	// under t.TempDir() readable by every user, for a backend on this host.
	SkillDir func(t *testing.T, files map[string]string) string
	// Workspace returns an empty folder as Spec.Workspace takes it.
	// Default: like SkillDir.
	Workspace func(t *testing.T) string
	// Limits are every case's starting limits; a case changes only what it
	// exercises. Default: DefaultLimits.
	Limits *policy.Limits
	// Gone, when set, asserts that nothing of the run is left in the
	// backend (container, pod) once Run returned.
	Gone func(t *testing.T, runID string)
	// RunTimeout bounds each Run. Default: two minutes.
	RunTimeout time.Duration
	// Warm is a runner of the same backend with a warm pool of at least
	// one sandbox, for WarmRuns; required.
	Warm sandbox.Runner
}

// DefaultLimits are small and quick.
func DefaultLimits() policy.Limits {
	return policy.Limits{
		Timeout:     30 * time.Second,
		MemoryBytes: 256 << 20,
		CPUs:        1,
		Pids:        128,
		OutputBytes: 1 << 20,
		TmpBytes:    16 << 20,
	}
}

// Case is one behaviour of the contract.
type Case struct {
	Name string
	Run  func(t *testing.T, e Env)
}

// Cases are every behaviour the suite checks, in a stable order.
func Cases() []Case {
	return []Case{
		{"ExitCodes", ExitCodes},
		{"StdinJSONAndEnv", StdinJSONAndEnv},
		{"Signals", Signals},
		{"Timeout", Timeout},
		{"OutOfMemory", OutOfMemory},
		{"OutputCaps", OutputCaps},
		{"ReadOnly", ReadOnly},
		{"TmpIsSizeLimited", TmpIsSizeLimited},
		{"NonRoot", NonRoot},
		{"NoNetwork", NoNetwork},
		{"Localhost", Localhost},
		{"EgressAllowlist", EgressAllowlist},
		{"EgressProxyGone", EgressProxyGone},
		{"WritableWorkspace", WritableWorkspace},
		{"WorkspaceWriteCap", WorkspaceWriteCap},
		{"BeyondHost", BeyondHost},
		{"CancelledRuns", CancelledRuns},
		{"WarmRuns", WarmRuns},
	}
}

// Run runs every case as a subtest, in parallel with each other.
func Run(t *testing.T, e Env) {
	t.Helper()
	require.NotNil(t, e.Runner, "sandboxtest: Env.Runner is required")
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			c.Run(t, e)
		})
	}
}

func (e Env) limits() policy.Limits {
	if e.Limits != nil {
		return *e.Limits
	}
	return DefaultLimits()
}

func (e Env) skillDir(t *testing.T, files map[string]string) string {
	t.Helper()
	if e.SkillDir != nil {
		return e.SkillDir(t, files)
	}
	return HostSkillDir(t, files)
}

func (e Env) workspace(t *testing.T) string {
	t.Helper()
	if e.Workspace != nil {
		return e.Workspace(t)
	}
	return HostDir(t)
}

// HostDir is an empty folder under t.TempDir() that every user can read:
// the sandbox runs as another user than the test. Its parents need no
// change, as the engine (root) resolves a mount's source.
func HostDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755)) //nolint:gosec // the sandbox user must read it
	return dir
}

// HostSkillDir writes a skill named "t" (SKILL.md plus files) into a
// HostDir.
func HostSkillDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := HostDir(t)
	all := map[string]string{"SKILL.md": "---\nname: t\ndescription: conformance\n---\n"}
	for k, v := range files {
		all[k] = v
	}
	for name, body := range all {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))  //nolint:gosec // as above
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644)) //nolint:gosec // as above
	}
	return dir
}

var seq atomic.Int64

// spec is a run of inline Python in an empty skill named "t".
func (e Env) spec(t *testing.T, code string, args ...string) sandbox.Spec {
	t.Helper()
	return sandbox.Spec{
		RunID:    fmt.Sprintf("conf-%d-%d", os.Getpid(), seq.Add(1)),
		Skill:    "t",
		SkillDir: e.skillDir(t, nil),
		Argv:     append([]string{"python3", "-c", code}, args...),
		Runtime:  "python3",
		Limits:   e.limits(),
	}
}

// run executes spec, requires a Result without a Go error, and checks that
// nothing of it is left.
func (e Env) run(t *testing.T, spec sandbox.Spec) *sandbox.Result {
	t.Helper()
	d := e.RunTimeout
	if d == 0 {
		d = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res, err := e.Runner.Run(ctx, spec)
	require.NoError(t, err)
	require.NotNil(t, res)
	require.Equal(t, spec.RunID, res.ID)
	if e.Gone != nil {
		e.Gone(t, spec.RunID)
	}
	return res
}
