package policy

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func mustPolicy(t *testing.T, text string) *Operator {
	t.Helper()
	o, err := ParsePolicy("test.yaml", []byte(text))
	require.NoError(t, err)
	return o
}

func TestParsePolicyErrorsNameTheLine(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"unknown top-level key", "limits: {}\nfirewall: none\n", "line 2"},
		{"unknown limit", "limits:\n  disk: {max: 1Gi}\n", "line 2"},
		{"unknown range key", "limits:\n  memory: {maximum: 1Gi}\n", "line 2"},
		{"bare size", "limits:\n  memory:\n    max: 512\n", "line 3: \"512\" is not a size"},
		{"bad unit", "limits:\n  memory: {max: 2Gb5}\n", "line 2"},
		{"bad duration", "limits:\n  timeout: {max: soon}\n", "line 2: \"soon\" is not a duration"},
		{"timeout above absolute", "limits:\n  timeout: {max: 20m}\n", "line 2: limits.timeout.max 1200s is outside 1s–600s"},
		{"default above max", "limits:\n  memory:\n    default: 4Gi\n    max: 2Gi\n", "line 4: limits.memory default 4GiB is above its max 2GiB"},
		{"skill default above global max", "limits:\n  cpus: {max: 2}\nskills:\n  x:\n    limits:\n      cpus: {default: 3}\n", "line 6: skills.x.limits.cpus default 3 is above its max 2"},
		{"bad on_exceed", "on_exceed: warn\n", "line 1: on_exceed is \"warn\"; use one of: clamp, refuse"},
		{"bad network", "network: open\n", "line 1: network is \"open\"; use one of: none, allowlist, declared"},
		{"bad workspace write", "workspace:\n  write: yes\n", "line 2: workspace.write"},
		{"relative root", "workspace:\n  roots: [work]\n", "line 2: workspace.roots entry \"work\" must be an absolute path"},
		{"bad grant", "skills:\n  pdf:\n    allowed-tools: Bash(git status:*\n", "line 3: skills.pdf.allowed-tools"},
		{"bad package", "skills:\n  pdf:\n    system_packages: [\"x; rm -rf /\"]\n", "line 3: skills.pdf: package"},
		{"memory below minimum", "limits:\n  memory: {max: 1Mi}\n", "line 2: limits.memory.max 1MiB is below the minimum of 16MiB"},
		{"output default", "limits:\n  output: {default: 1Mi}\n", "line 2: limits.output takes only max"},
		{"not a mapping", "- a\n", "line 1"},
		{"negative cpus", "limits:\n  cpus: {max: -1}\n", "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicy("p.yaml", []byte(tt.text))
			require.ErrorIs(t, err, ErrPolicyFile)
			require.ErrorContains(t, err, "p.yaml")
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestEmptyPolicyIsBuiltin(t *testing.T) {
	for _, text := range []string{"", "# nothing\n", "limits: {}\n"} {
		o := mustPolicy(t, text)
		l, err := o.Decide("s", SkillLimits{}, Request{})
		require.NoError(t, err)
		b, err := BuiltinPolicy().Decide("s", SkillLimits{}, Request{})
		require.NoError(t, err)
		require.Equal(t, b.MemoryBytes, l.MemoryBytes)
		require.Equal(t, b.Timeout, l.Timeout)
		require.Len(t, o.Digest, 64)
	}
	require.Equal(t, "builtin", BuiltinPolicy().Digest)
}

const strictText = `limits:
  timeout: {default: 20s, max: 60s}
  memory: {default: 256Mi, max: 1Gi}
  cpus: {default: 0.5, max: 1}
  pids: {default: 128, max: 512}
  output: {max: 1Mi}
  workspace_write: {max: 100Mi}
on_exceed: clamp
network: none
workspace:
  write: read-only
skills:
  pdf:
    allowed-tools: Bash(python3:*) Read
    system_packages: [python3-pypdf]
    network: declared
    limits:
      timeout: {max: 300s}
`

func TestDecideOrderAndCeilings(t *testing.T) {
	o := mustPolicy(t, strictText)
	tests := []struct {
		name     string
		skill    string
		sl       SkillLimits
		req      Request
		timeout  time.Duration
		memMiB   int64
		cpus     float64
		clamped  []string
		network  bool
		fromTime string
	}{
		{"policy defaults", "s", SkillLimits{}, Request{}, 20 * time.Second, 256, 0.5, nil, false, "policy limits.timeout.default (test.yaml line 2)"},
		{"skill value within ceiling", "s", SkillLimits{Timeout: 45 * time.Second, MemoryMiB: 512}, Request{}, 45 * time.Second, 512, 0.5, nil, false, "skill max_execution_time"},
		{"skill value clamped", "s", SkillLimits{Timeout: 600 * time.Second, MemoryMiB: 20480, CPUs: 8, Network: true}, Request{}, 60 * time.Second, 1024, 1, []string{"timeout", "memory", "cpus"}, false, "policy limits.timeout.max (test.yaml line 2) (the skill max_execution_time asked for 600s)"},
		{"request beats skill", "s", SkillLimits{Timeout: 10 * time.Second}, Request{Timeout: 50 * time.Second}, 50 * time.Second, 256, 0.5, nil, false, "request"},
		{"request clamped", "s", SkillLimits{}, Request{Timeout: 100 * time.Second}, 60 * time.Second, 256, 0.5, []string{"timeout"}, false, "policy limits.timeout.max (test.yaml line 2) (the request asked for 100s)"},
		{"per-skill ceiling raises", "pdf", SkillLimits{Timeout: 250 * time.Second, Network: true}, Request{}, 250 * time.Second, 256, 0.5, nil, true, "skill max_execution_time"},
		{"per-skill ceiling clamps", "pdf", SkillLimits{Timeout: 500 * time.Second}, Request{}, 300 * time.Second, 256, 0.5, []string{"timeout"}, false, "policy skills.pdf.limits.timeout.max (test.yaml line 18) (the skill max_execution_time asked for 500s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := o.Decide(tt.skill, tt.sl, tt.req)
			require.NoError(t, err)
			require.Equal(t, tt.timeout, l.Timeout)
			require.InDelta(t, tt.timeout.Seconds(), l.TimeoutSec, 1e-9)
			require.Equal(t, tt.memMiB<<20, l.MemoryBytes)
			require.InDelta(t, tt.cpus, l.CPUs, 1e-9)
			require.Equal(t, tt.clamped, l.Clamped)
			require.Equal(t, tt.network, l.Network)
			require.Equal(t, tt.fromTime, l.Sources["timeout"].String())
			require.Equal(t, int64(128), l.Pids)
			require.Equal(t, int64(1<<20), l.OutputBytes)
			require.Equal(t, int64(100<<20), l.WorkspaceWriteBytes)
		})
	}
}

func TestDecideRefuse(t *testing.T) {
	o := mustPolicy(t, "limits:\n  memory: {max: 1Gi}\n  timeout: {max: 60s}\non_exceed: refuse\n")
	_, err := o.Decide("s", SkillLimits{MemoryMiB: 20480}, Request{})
	require.ErrorIs(t, err, ErrLimit)
	require.ErrorContains(t, err, "the skill max_memory asks for memory 20GiB, above the ceiling of 1GiB set by policy limits.memory.max (test.yaml line 2)")
	_, err = o.Decide("s", SkillLimits{}, Request{Timeout: 61 * time.Second})
	require.ErrorContains(t, err, "ask for at most 60s")
	// Within the ceiling, a request may raise the skill's value.
	l, err := o.Decide("s", SkillLimits{Timeout: 5 * time.Second}, Request{Timeout: 60 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 60*time.Second, l.Timeout)
}

func TestNetworkNoneBeatsTheSkill(t *testing.T) {
	for text, want := range map[string]bool{
		"network: none\n":                    false,
		"network: declared\n":                true,
		"":                                   true,
		"skills:\n  s:\n    network: none\n": false,
		"network: none\nskills:\n  s: {network: declared}\n": true,
	} {
		l, err := mustPolicy(t, text).Decide("s", SkillLimits{Network: true}, Request{})
		require.NoError(t, err)
		require.Equal(t, want, l.Network, "%q", text)
		require.NotEmpty(t, l.Sources["network"].String())
		// A skill that asks for nothing never gets a network.
		l, err = mustPolicy(t, text).Decide("s", SkillLimits{}, Request{})
		require.NoError(t, err)
		require.False(t, l.Network)
	}
}

func TestWorkspaceRules(t *testing.T) {
	o := mustPolicy(t, strictText)
	require.False(t, o.WorkspaceWritable(true), "read-only beats Write")
	require.False(t, o.WorkspaceWritable(false))
	require.True(t, BuiltinPolicy().WorkspaceWritable(true))
	require.False(t, BuiltinPolicy().WorkspaceWritable(false))

	root := t.TempDir()
	inside := filepath.Join(root, "ci", "job1")
	require.NoError(t, os.MkdirAll(inside, 0o755))
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(root, link))
	roots := mustPolicy(t, "workspace:\n  roots: ["+link+"]\n")
	real, err := filepath.EvalSymlinks(inside)
	require.NoError(t, err)
	require.NoError(t, roots.CheckWorkspaceRoot(real))
	require.NoError(t, roots.CheckWorkspaceRoot(mustEval(t, root)))
	err = roots.CheckWorkspaceRoot(mustEval(t, t.TempDir()))
	require.ErrorIs(t, err, ErrWorkspaceRoot)
	require.ErrorContains(t, err, "line 2")
	// A sibling whose name merely starts with the root's is outside it.
	sibling := mustEval(t, root) + "-other"
	require.ErrorIs(t, roots.CheckWorkspaceRoot(sibling), ErrWorkspaceRoot)
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return r
}

func TestGrantsAdd(t *testing.T) {
	o := mustPolicy(t, strictText)
	require.Equal(t, "Bash(python3:*), Read", o.ExtraTools("pdf").String())
	require.Empty(t, o.ExtraTools("other"))
	sys, py := o.ExtraPackages("pdf")
	require.Equal(t, []string{"python3-pypdf"}, sys)
	require.Empty(t, py)
	require.NoError(t, o.ExtraTools("pdf").CheckCommand("python3 x.py"))
	// A grant adds entries; the checker's rules still hold for them.
	require.ErrorIs(t, o.ExtraTools("pdf").CheckCommand("python3 $(id)"), ErrDenied)
}

func TestRuntimeRule(t *testing.T) {
	o := mustPolicy(t, "runtime: runsc\n")
	rt, err := o.CheckRuntime("")
	require.NoError(t, err)
	require.Equal(t, "runsc", rt)
	rt, err = o.CheckRuntime("runsc")
	require.NoError(t, err)
	require.Equal(t, "runsc", rt)
	_, err = o.CheckRuntime("runc")
	require.ErrorContains(t, err, "requires \"runsc\"")
	rt, err = BuiltinPolicy().CheckRuntime("kata")
	require.NoError(t, err)
	require.Equal(t, "kata", rt)
}

func TestParseSecondsAndSize(t *testing.T) {
	for in, want := range map[string]time.Duration{"5": 5 * time.Second, "1.5": 1500 * time.Millisecond, "5s": 5 * time.Second, "2m": 2 * time.Minute, " 7 ": 7 * time.Second} {
		got, err := ParseSeconds(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "0", "-1", "soon", "NaN", "-1s", "1e300"} {
		_, err := ParseSeconds(in)
		require.Error(t, err, in)
	}
	for in, want := range map[string]int64{"512Mi": 512 << 20, "512m": 512 << 20, "2Gi": 2 << 30, "2GiB": 2 << 30, "1g": 1 << 30, "64MiB": 64 << 20} {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"512", "", "lots", "-1Mi", "1Xi", "Mi"} {
		_, err := ParseSize(in)
		require.Error(t, err, in)
	}
}

func TestFilePath(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	require.Equal(t, "flag.yaml", FilePath("flag.yaml", env("env.yaml")))
	require.Equal(t, "env.yaml", FilePath("", env("env.yaml")))
	want := ""
	if _, err := os.Stat(DefaultPolicyPath); err == nil {
		want = DefaultPolicyPath
	}
	require.Equal(t, want, FilePath("", env("")))
}

func TestEntriesShowOrigins(t *testing.T) {
	o := mustPolicy(t, strictText)
	got := map[string]Entry{}
	for _, e := range o.Entries() {
		got[e.Key] = e
	}
	require.Equal(t, Entry{"limits.memory.max", "1GiB", "line 3"}, got["limits.memory.max"])
	require.Equal(t, Entry{"network", "none", "line 9"}, got["network"])
	require.Equal(t, Entry{"skills.pdf.limits.timeout.max", "300s", "line 18"}, got["skills.pdf.limits.timeout.max"])
	require.Equal(t, "builtin default", got["build.source_builds"].From)
	b := map[string]Entry{}
	for _, e := range BuiltinPolicy().Entries() {
		b[e.Key] = e
	}
	require.Equal(t, Entry{"limits.memory.max", "none", "builtin default"}, b["limits.memory.max"])
}

// TestExamplePolicies keeps the example files docs/policy.md shows valid.
func TestExamplePolicies(t *testing.T) {
	for _, name := range []string{"policy-ci.yaml", "policy-agent-host.yaml"} {
		o, err := LoadPolicy(filepath.Join("..", "examples", name))
		require.NoError(t, err, name)
		l, err := o.Decide("any", SkillLimits{Timeout: 600 * time.Second, MemoryMiB: 20480, Network: true}, Request{})
		if o.OnExceed.Value == OnExceedRefuse {
			require.ErrorIs(t, err, ErrLimit, name)
			continue
		}
		require.NoError(t, err, name)
		require.False(t, l.Network, name)
		require.Equal(t, []string{"timeout", "memory"}, l.Clamped, name)
	}
}

func TestDefaultAboveCeilingIsTheCeiling(t *testing.T) {
	o := mustPolicy(t, "limits: {timeout: {max: 10s}}\nskills:\n  s:\n    limits: {memory: {max: 256Mi}}\n")
	l, err := o.Decide("s", SkillLimits{}, Request{})
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, l.Timeout)
	require.Equal(t, int64(256<<20), l.MemoryBytes)
	require.Empty(t, l.Clamped)
	require.Contains(t, l.Sources["timeout"].String(), "limits.timeout.max")
}
