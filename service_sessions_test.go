package sandboxrun_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// blockingEngine holds each run until released, to watch runs overlap.
type blockingEngine struct {
	fakeEngine
	running, most int
	gate          chan struct{}
	started       chan sandbox.Spec
}

func (b *blockingEngine) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	b.mu.Lock()
	b.running++
	b.most = max(b.most, b.running)
	b.mu.Unlock()
	b.started <- spec
	var err error
	select {
	case <-b.gate:
	case <-ctx.Done():
		err = ctx.Err()
	}
	b.mu.Lock()
	b.running--
	b.mu.Unlock()
	return &sandbox.Result{ID: "r", Skill: spec.Skill, Started: true}, err
}

func TestSessionRunUsesTheSessionFolder(t *testing.T) {
	svc, eng := newService(t, sandboxrun.Config{SessionsRoot: t.TempDir()})
	st, err := sandboxrun.SessionStore(svc)
	require.NoError(t, err)
	info, err := st.Create("owner-a", 0)
	require.NoError(t, err)
	_, err = st.PutFile("owner-a", info.ID, "in.csv", strings.NewReader("a,b\n1,2\n"))
	require.NoError(t, err)

	_, err = svc.For(sandboxrun.Caller{Owner: "owner-a"}).RunScript(context.Background(), "hello", "scripts/echo.py", sandboxrun.Request{Session: info.ID})
	require.NoError(t, err)
	require.Len(t, eng.specs, 1)
	spec := eng.specs[0]
	require.True(t, spec.WorkspaceWritable, "a session's folder is the caller's own scratch space")
	require.FileExists(t, filepath.Join(spec.Workspace, "in.csv"))
	require.Equal(t, int64(policy.DefaultSessionQuota), spec.Limits.WorkspaceWriteBytes, "files and writes share the quota")
	// The view's room comes from the store's count, not from a walk.
	require.NotNil(t, spec.WorkspaceFacts, "the session store vouches for its files")
	require.Equal(t, int64(len("a,b\n1,2\n")), spec.WorkspaceFacts.Bytes)
	require.Equal(t, spec.Limits.WorkspaceWriteBytes-spec.WorkspaceFacts.Bytes, spec.WorkspaceFacts.Room(spec.Limits.WorkspaceWriteBytes))

	for name, c := range map[string]struct {
		owner string
		req   sandboxrun.Request
	}{
		"another owner":       {"owner-b", sandboxrun.Request{Session: info.ID}},
		"unknown session":     {"owner-a", sandboxrun.Request{Session: "nosuchsession"}},
		"session + workspace": {"owner-a", sandboxrun.Request{Session: info.ID, Workspace: t.TempDir()}},
	} {
		_, err := svc.For(sandboxrun.Caller{Owner: c.owner}).RunScript(context.Background(), "hello", "scripts/echo.py", c.req)
		require.ErrorIs(t, err, sandboxrun.ErrRefused, name)
	}
	_, err = svc.For(sandboxrun.Caller{Owner: "owner-b"}).RunScript(context.Background(), "hello", "scripts/echo.py", sandboxrun.Request{Session: info.ID})
	require.ErrorIs(t, err, session.ErrNotFound, "another owner's session does not exist for it")
	require.Len(t, eng.specs, 1, "no refused run reached the engine")
}

func TestSessionWritePolicy(t *testing.T) {
	pol, err := policy.ParsePolicy("p.yaml", []byte("sessions:\n  write: false\n  quota: 8Mi\n"))
	require.NoError(t, err)
	svc, eng := newService(t, sandboxrun.Config{SessionsRoot: t.TempDir(), Policy: pol})
	st, err := sandboxrun.SessionStore(svc)
	require.NoError(t, err)
	info, err := st.Create("", 0)
	require.NoError(t, err)
	_, err = svc.RunPython(context.Background(), "hello", []byte("print(1)"), sandboxrun.Request{Session: info.ID})
	require.NoError(t, err)
	require.False(t, eng.specs[0].WorkspaceWritable, "sessions.write: false")
	require.Nil(t, eng.specs[0].WorkspaceFacts, "a read-only session has no view to size")
}

func TestNoSessionsSaysHowToGetThem(t *testing.T) {
	svc, _ := newService(t, sandboxrun.Config{})
	_, err := sandboxrun.SessionStore(svc)
	require.ErrorIs(t, err, sandboxrun.ErrNoSessions)
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	require.ErrorContains(t, err, "--sessions DIR")
	_, err = svc.RunScript(context.Background(), "hello", "scripts/echo.py", sandboxrun.Request{Session: "x"})
	require.ErrorIs(t, err, sandboxrun.ErrNoSessions)
}

func TestKubernetesSessions(t *testing.T) {
	root := t.TempDir()
	for name, tc := range map[string]struct{ yaml, err string }{
		"writable needs no claim":          {"backend: kubernetes\n", ""},
		"read-only from the node":          {"backend: kubernetes\nsessions: {write: false}\n", ""},
		"read-only without claim or nodes": {"backend: kubernetes\nkubernetes: {host_paths: false}\nsessions: {write: false}\n", "kubernetes.claims"},
		"read-only from a claim":           {"backend: kubernetes\nkubernetes:\n  host_paths: false\n  claims: [{name: work, path: " + root + "}]\nsessions: {write: false}\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			pol, err := policy.ParsePolicy("p.yaml", []byte(tc.yaml))
			require.NoError(t, err)
			svc, _ := newService(t, sandboxrun.Config{SessionsRoot: filepath.Join(root, "s"), Policy: pol})
			_, err = sandboxrun.SessionStore(svc)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, sandboxrun.ErrNoSessions)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestSessionRunsAreSerializedAndCancelledByDelete(t *testing.T) {
	eng := &blockingEngine{gate: make(chan struct{}), started: make(chan sandbox.Spec, 4)}
	eng.images = map[string]string{sandboxrun.RunnerImage(): "sha256:runner"}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"skills"}, Runner: eng, SessionsRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	st, err := sandboxrun.SessionStore(svc)
	require.NoError(t, err)
	info, err := st.Create("o", 0)
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			_, err := svc.For(sandboxrun.Caller{Owner: "o"}).RunPython(context.Background(), "hello", []byte("print(1)"), sandboxrun.Request{Session: info.ID})
			errs <- err
		})
	}
	<-eng.started
	select {
	case <-eng.started:
		t.Fatal("a second run in the session started while the first ran")
	case <-time.After(200 * time.Millisecond):
	}
	eng.gate <- struct{}{} // the first ends; the second starts
	<-eng.started
	require.NoError(t, <-errs)
	require.NoError(t, st.Delete("o", info.ID), "deleting cancels the run in it")
	wg.Wait()
	require.ErrorIs(t, <-errs, context.Canceled)
	require.Equal(t, 1, eng.most, "never two runs at once in one session")
}
