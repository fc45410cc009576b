package sandboxrun_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

const ownerX = "1111111111111111111111111111111111111111111111111111111111111111"

// cacheSkill writes a skill whose scripts/x.py the tests run, with extra
// frontmatter lines, and returns the skills root and the skill folder.
func cacheSkill(t *testing.T, extra string) (string, string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "cachy")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	md := "---\nname: cachy\ndescription: Caches. Use it in tests.\n" + extra + "---\nRun scripts/x.py.\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "x.py"), []byte("print(1)\n"), 0o644))
	return root, dir
}

func TestResultCacheHitsAndEachKeyPart(t *testing.T) {
	root, dir := cacheSkill(t, "")
	svc, eng := newService(t, sandboxrun.Config{SkillRoots: []string{root},
		Policy: writePolicy(t, "cache:\n  ttl: 10m\n")})
	ctx := context.Background()
	base := func() sandboxrun.Request {
		return sandboxrun.Request{Args: []byte(`{"a":1}`), Argv: []string{"x"}, Env: map[string]string{"K": "v"}}
	}
	owner := ownerX
	run := func(req sandboxrun.Request) *sandbox.Result {
		t.Helper()
		res, err := svc.For(sandboxrun.Caller{Owner: owner}).RunScript(ctx, "cachy", "scripts/x.py", req)
		require.NoError(t, err)
		return res
	}
	first := run(base())
	require.Equal(t, sandboxrun.CacheMiss, first.Cache)
	var live bytes.Buffer
	req := base()
	req.Stdout = &live
	hit := run(req)
	require.Equal(t, sandboxrun.CacheHit, hit.Cache)
	require.Equal(t, first.ID, hit.ID, "the id of the run that made it")
	require.Equal(t, 1, len(eng.specs), "a hit runs nothing")

	// Each input changed alone is a miss (and then a hit of its own).
	for name, change := range map[string]func(*sandboxrun.Request){
		"args":    func(r *sandboxrun.Request) { r.Args = []byte(`{"a":2}`) },
		"argv":    func(r *sandboxrun.Request) { r.Argv = []string{"y"} },
		"env":     func(r *sandboxrun.Request) { r.Env = map[string]string{"K": "w"} },
		"limits":  func(r *sandboxrun.Request) { r.Timeout = 7 * time.Second },
		"owner":   func(*sandboxrun.Request) { owner = "" },
		"workdir": func(r *sandboxrun.Request) { r.WorkDir = "skill" },
	} {
		req, owner = base(), ownerX
		change(&req)
		before := len(eng.specs)
		require.Equal(t, sandboxrun.CacheMiss, run(req).Cache, name)
		require.Equal(t, before+1, len(eng.specs), name)
		require.Equal(t, sandboxrun.CacheHit, run(req).Cache, name)
	}
	owner = ownerX

	// The skill's content and the image are in the key too.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "x.py"), []byte("print(2)\n"), 0o644))
	require.Equal(t, sandboxrun.CacheMiss, run(base()).Cache, "the skill changed")
	eng.mu.Lock()
	eng.images[sandboxrun.RunnerImage()] = "sha256:rebuilt"
	eng.mu.Unlock()
	require.Equal(t, sandboxrun.CacheMiss, run(base()).Cache, "the image changed")
	require.Equal(t, sandboxrun.CacheHit, run(base()).Cache)

	// A read-only workspace's content is in the key.
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "in.txt"), []byte("a"), 0o644))
	wreq := base()
	wreq.Workspace = ws
	require.Equal(t, sandboxrun.CacheMiss, run(wreq).Cache)
	require.Equal(t, sandboxrun.CacheHit, run(wreq).Cache)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "in.txt"), []byte("b"), 0o644))
	require.Equal(t, sandboxrun.CacheMiss, run(wreq).Cache, "the workspace changed")
}

func TestResultCacheLeavesOutWhatIsNotDeterministic(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct{ extra, policy string }{
		"off by default":     {"", "network: none\n"},
		"network":            {"metadata:\n  network_access: \"true\"\n", "cache:\n  ttl: 10m\nnetwork: declared\n"},
		"writable workspace": {"allowed-tools: Write\n", "cache:\n  ttl: 10m\n"},
	} {
		t.Run(name, func(t *testing.T) {
			root, _ := cacheSkill(t, tc.extra)
			svc, eng := newService(t, sandboxrun.Config{SkillRoots: []string{root}, Policy: writePolicy(t, tc.policy)})
			for range 2 {
				res, err := svc.RunScript(ctx, "cachy", "scripts/x.py", sandboxrun.Request{Workspace: t.TempDir()})
				require.NoError(t, err)
				require.Empty(t, res.Cache)
			}
			require.Equal(t, 2, len(eng.specs))
		})
	}
}

func TestResultCacheSharedAcrossTokensOnlyWhenSet(t *testing.T) {
	root, _ := cacheSkill(t, "")
	svc, eng := newService(t, sandboxrun.Config{SkillRoots: []string{root},
		Policy: writePolicy(t, "cache:\n  ttl: 10m\n  shared: true\n")})
	ctx := context.Background()
	_, err := svc.For(sandboxrun.Caller{Owner: ownerX}).RunScript(ctx, "cachy", "scripts/x.py", sandboxrun.Request{})
	require.NoError(t, err)
	res, err := svc.RunScript(ctx, "cachy", "scripts/x.py", sandboxrun.Request{})
	require.NoError(t, err)
	require.Equal(t, sandboxrun.CacheHit, res.Cache)
	require.Equal(t, 1, len(eng.specs))
}
