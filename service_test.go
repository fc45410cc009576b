package sandboxrun_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// fakeEngine records what the Service asks of the backend.
type fakeEngine struct {
	mu     sync.Mutex
	specs  []sandbox.Spec
	pings  int
	images map[string]string // ref -> id; absent is not found
	res    *sandbox.Result
	err    error
	// host is what the engine's host offers (zero: unknown, not checked);
	// hostErr fails the asking, as an engine away does.
	host    sandbox.HostCapacity
	hostErr error
}

// CheckSpec is the check a backend makes before it starts anything.
func (f *fakeEngine) CheckSpec(_ context.Context, spec sandbox.Spec) error {
	if f.hostErr != nil {
		return f.hostErr
	}
	return sandbox.CheckHost(&spec, f.host)
}

func (f *fakeEngine) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	if err := f.CheckSpec(ctx, spec); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.specs = append(f.specs, spec)
	if f.res == nil {
		return &sandbox.Result{ID: "r1", Skill: spec.Skill, Started: true, Success: true, Limits: spec.Limits, Image: spec.Image}, f.err
	}
	return f.res, f.err
}

func (f *fakeEngine) CheckImage(_ context.Context, ref string) (string, error) {
	if id, ok := f.images[ref]; ok {
		return id, nil
	}
	return "", sandbox.ErrImageNotFound
}

func (f *fakeEngine) Ping(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pings++
	return nil
}

func (f *fakeEngine) Close() error { return nil }

// observed collects Observer calls.
type observed struct {
	mu      sync.Mutex
	got     []string // skill:outcome
	sources []string
}

func (o *observed) Observe(ob sandboxrun.Observed) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, ob.Skill+":"+string(ob.Outcome))
	o.sources = append(o.sources, ob.Source)
}

func newService(t *testing.T, cfg sandboxrun.Config) (*sandboxrun.Service, *fakeEngine) {
	t.Helper()
	eng := &fakeEngine{images: map[string]string{sandboxrun.RunnerImage(): "sha256:runner"}}
	if cfg.SkillRoots == nil {
		cfg.SkillRoots = []string{"skills"}
	}
	cfg.Runner = eng
	svc, err := sandboxrun.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	return svc, eng
}

func readAudit(t *testing.T, path string) []audit.Record {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var recs []audit.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r audit.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		recs = append(recs, r)
	}
	return recs
}

func TestServiceRunsEachOperationThroughOneSequence(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(logPath)
	require.NoError(t, err)
	obs := &observed{}
	svc, eng := newService(t, sandboxrun.Config{Audit: log, Observer: obs})
	ctx := context.Background()

	_, err = svc.RunScript(ctx, "hello", "scripts/echo.py", sandboxrun.Request{Args: []byte(`{"a":1}`)})
	require.NoError(t, err)
	_, err = svc.RunCommand(ctx, "hello", "echo hi", sandboxrun.Request{})
	require.NoError(t, err)
	_, err = svc.RunPython(ctx, "hello", []byte("print(1)"), sandboxrun.Request{})
	require.NoError(t, err)
	_, err = svc.RunCommand(ctx, "hello", "curl http://x", sandboxrun.Request{})
	var denied *policy.DeniedError
	require.ErrorAs(t, err, &denied)
	require.ErrorIs(t, err, sandboxrun.ErrRefused)

	require.Len(t, eng.specs, 3, "the refused command never reached the engine")
	require.Equal(t, []string{"python3", "/skills/hello/scripts/echo.py"}, eng.specs[0].Argv)
	require.Equal(t, []byte(`{"a":1}`), eng.specs[0].Stdin)
	require.Equal(t, "bash", eng.specs[1].Runtime)
	require.Equal(t, []byte("print(1)"), eng.specs[2].Stdin)
	for _, sp := range eng.specs {
		require.Equal(t, sandboxrun.RunnerImage(), sp.Image, "a skill without packages runs in the runner")
	}
	require.Equal(t, 1, eng.pings, "the engine is pinged once, on first use, not on every run")

	recs := readAudit(t, logPath)
	require.Len(t, recs, 4, "one record per request, the refusal included")
	require.Equal(t, "scripts/echo.py", recs[0].Script)
	require.True(t, recs[3].Refused)
	require.Contains(t, recs[3].Error, "curl")
	require.Equal(t, "builtin", recs[3].PolicyDigest)

	require.Equal(t, []string{"hello:success", "hello:success", "hello:success", "hello:refused"}, obs.got)
}

func TestServiceRefusesPathsFromRemoteCallers(t *testing.T) {
	abs, err := filepath.Abs("skills/hello")
	require.NoError(t, err)
	remote, eng := newService(t, sandboxrun.Config{})
	for _, ref := range []string{abs, "./skills/hello", "../hello", "..", ".", "", "hel\x00lo", "a\\b"} {
		_, err := remote.RunScript(context.Background(), ref, "scripts/echo.py", sandboxrun.Request{})
		require.ErrorIs(t, err, skill.ErrSkillNotFound, "ref %q", ref)
		require.ErrorIs(t, err, sandboxrun.ErrRefused, "ref %q", ref)
	}
	require.Empty(t, eng.specs)

	local, _ := newService(t, sandboxrun.Config{AllowSkillPaths: true})
	sk, err := local.Skill(abs)
	require.NoError(t, err, "a local front end may name a folder")
	require.Equal(t, "hello", sk.Manifest.Name)
}

func TestServiceFindsSkillsAcrossRoots(t *testing.T) {
	extra := t.TempDir()
	dir := filepath.Join(extra, "other")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: other\ndescription: d\n---\nbody {baseDir}\n"), 0o644))
	svc, _ := newService(t, sandboxrun.Config{SkillRoots: []string{"skills", extra}})

	list, errs := svc.Skills()
	require.Empty(t, errs)
	var names []string
	for _, sk := range list {
		names = append(names, sk.Manifest.Name)
	}
	require.Contains(t, names, "hello")
	require.Contains(t, names, "other")

	a, err := svc.For(sandboxrun.Local).Activate("other")
	require.NoError(t, err)
	require.Equal(t, "body /skills/other\n", a.Body)
}

func TestServiceActivationCarriesGrants(t *testing.T) {
	pol := writePolicy(t, "skills:\n  hello:\n    allowed-tools: Bash(git status:*)\n")
	svc, _ := newService(t, sandboxrun.Config{Policy: pol})
	a, err := svc.For(sandboxrun.Local).Activate("hello")
	require.NoError(t, err)
	var specs []string
	for _, tool := range a.AllowedTools {
		specs = append(specs, tool.String())
	}
	require.Contains(t, specs, "Bash(git status:*)")
	require.Contains(t, specs, "Bash(python3:*)")
}

func TestServiceEnforcesItsPolicyNotTheRequests(t *testing.T) {
	pol := writePolicy(t, "limits:\n  timeout: {default: 5s, max: 10s}\non_exceed: refuse\n")
	svc, eng := newService(t, sandboxrun.Config{Policy: pol})
	// A request carrying a permissive policy of its own gets the Service's.
	_, err := svc.RunScript(context.Background(), "hello", "scripts/echo.py", sandboxrun.Request{
		Timeout: time.Minute, Policy: policy.BuiltinPolicy(),
	})
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	require.Contains(t, err.Error(), "limits.timeout.max")
	require.Empty(t, eng.specs)
}

func TestServiceRefusesMalformedDependenciesBeforeTheEngine(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "bad")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: bad\ndescription: d\n---\nx\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "x.py"),
		[]byte("# /// script\n# dependencies = [\"not a package name!!\"]\n# ///\nprint(1)\n"), 0o644))
	svc, eng := newService(t, sandboxrun.Config{SkillRoots: []string{root}})
	_, err := svc.RunScript(context.Background(), "bad", "scripts/x.py", sandboxrun.Request{})
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	require.Zero(t, eng.pings, "refused before the engine was contacted")
}

func TestServiceReportsEngineFailures(t *testing.T) {
	obs := &observed{}
	svc, eng := newService(t, sandboxrun.Config{Observer: obs})
	eng.err = errors.New("engine went away")
	eng.res = &sandbox.Result{Started: true, Skill: "hello"}
	res, err := svc.RunScript(context.Background(), "hello", "scripts/echo.py", sandboxrun.Request{})
	require.Error(t, err)
	require.True(t, res.Started, "a started run's Result comes back with the error")
	require.Equal(t, []string{"hello:error"}, obs.got)
}

func TestNewRefusesAnUnknownRuntimeUnderPolicy(t *testing.T) {
	pol := writePolicy(t, "runtime: runsc\n")
	_, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"skills"}, Policy: pol, OCIRuntime: "kata"})
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	_, err = sandboxrun.New(sandboxrun.Config{})
	require.ErrorContains(t, err, "skill roots")
}

func writePolicy(t *testing.T, text string) *policy.Operator {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	pol, err := policy.LoadPolicy(path)
	require.NoError(t, err)
	return pol
}

// The Spec carries the skill's digest, the one the Result reports, so a
// backend that copies the folder keeps its copy by it.
func TestServiceGivesTheEngineTheSkillDigest(t *testing.T) {
	svc, eng := newService(t, sandboxrun.Config{})
	res, err := svc.RunScript(context.Background(), "hello", "scripts/echo.py", sandboxrun.Request{})
	require.NoError(t, err)
	want, err := skillstore.Digest("skills/hello")
	require.NoError(t, err)
	require.Len(t, eng.specs, 1)
	require.Equal(t, want, eng.specs[0].SkillDigest)
	require.Equal(t, want, res.SkillDigest)
}
