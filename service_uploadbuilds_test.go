package sandboxrun_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/images/imagetest"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

func newBuildEngine() *imagetest.FailingBuilds {
	return imagetest.NewFailingBuilds(sandboxrun.RunnerImage(), "sha256:runner", "tabulate")
}

// buildsService is a Service with uploads on (policy lines added) whose
// image builds go to b, pip pointed at a wheel folder of the host.
func buildsService(t *testing.T, b *imagetest.FailingBuilds, store string, lines string) (*sandboxrun.Service, string) {
	t.Helper()
	pol, err := policy.ParsePolicy("p.yaml", []byte("skill_uploads:\n  allow: tokens\n  store: "+store+"\n"+lines))
	require.NoError(t, err)
	wheels := filepath.Join(t.TempDir(), "wheels")
	require.NoError(t, os.Mkdir(wheels, 0o755))
	svc, _ := newService(t, sandboxrun.Config{
		Policy: pol, Pip: images.PipConfig{FindLinks: []string{wheels}},
		Images: b.Client(),
	})
	return svc, wheels
}

// withPackages is an upload declaring python_packages.
func withPackages(t *testing.T, name string) io.Reader {
	t.Helper()
	return skillTarOf(t, map[string]string{
		"SKILL.md":     "---\nname: " + name + "\ndescription: Tabulates. Use it in tests.\nmetadata:\n  python_packages: \"tabulate\"\n---\nRun scripts/t.py.\n",
		"scripts/t.py": "print(1)\n",
	})
}

var ownerA, ownerB = strings.Repeat("a", 64), strings.Repeat("b", 64)

// By default an upload that declares packages is refused, naming the key
// that allows builds; a stored one is refused at run when the policy has
// since turned builds off, and nothing is built.
func TestUploadBuildsOffByDefault(t *testing.T) {
	store := t.TempDir()
	b := newBuildEngine()
	svc, _ := buildsService(t, b, store, "")
	st, err := sandboxrun.UploadStore(svc)
	require.NoError(t, err)
	_, err = st.Put(ownerA, skillstore.FormatTar, withPackages(t, "tab"))
	require.ErrorIs(t, err, sandboxrun.ErrUploadBuildsOff)
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	require.ErrorContains(t, err, "skill_uploads.builds.allow: true")
	require.ErrorContains(t, err, "Python: tabulate")

	on, _ := buildsService(t, b, store, "  builds: {allow: true}\n")
	st, err = sandboxrun.UploadStore(on)
	require.NoError(t, err)
	_, err = st.Put(ownerA, skillstore.FormatTar, withPackages(t, "tab"))
	require.NoError(t, err, "allowed, it is stored")

	off, _ := buildsService(t, b, store, "")
	_, err = off.For(sandboxrun.Caller{Owner: ownerA}).RunScript(context.Background(), "tab", "scripts/t.py", sandboxrun.Request{})
	require.ErrorIs(t, err, sandboxrun.ErrUploadBuildsOff)
	require.ErrorIs(t, err, sandboxrun.ErrRefused)
	require.ErrorContains(t, err, "skill_uploads.builds.allow")
	require.Empty(t, b.Started, "nothing was built")
}

// With builds on, a package no source has is the skill's problem
// (ErrUploadBuild, no refusal, no 5xx), told without the server's folders;
// a build past the timeout says which key bounds it.
func TestUploadBuildFailuresAreTheSkills(t *testing.T) {
	store := t.TempDir()
	b := newBuildEngine()
	svc, wheels := buildsService(t, b, store, "  builds: {allow: true, timeout: 1s}\n")
	st, err := sandboxrun.UploadStore(svc)
	require.NoError(t, err)
	_, err = st.Put(ownerA, skillstore.FormatTar, withPackages(t, "tab"))
	require.NoError(t, err)

	_, err = svc.For(sandboxrun.Caller{Owner: ownerA}).RunScript(context.Background(), "tab", "scripts/t.py", sandboxrun.Request{})
	require.ErrorIs(t, err, sandboxrun.ErrUploadBuild)
	require.NotErrorIs(t, err, sandboxrun.ErrRefused)
	told := sandboxrun.Tell(svc, err).Error()
	require.Contains(t, told, "pip install step exited with status 1")
	require.Contains(t, told, "No matching distribution found for tabulate")
	require.Contains(t, told, "the server's wheel folder")
	require.NotContains(t, told, wheels)
	require.NotContains(t, told, store)
	require.NotContains(t, err.Error(), wheels, "nor the operator's message")

	b.Hold = make(chan struct{}) // never released: the build runs past its 1s
	_, err = svc.For(sandboxrun.Caller{Owner: ownerA}).RunScript(context.Background(), "tab", "scripts/t.py", sandboxrun.Request{})
	require.ErrorIs(t, err, sandboxrun.ErrUploadBuild)
	require.ErrorContains(t, err, "took longer than skill_uploads.builds.timeout allows (1s)")
}

// One token runs at most max_concurrent_per_token builds at once; another
// token's are its own.
func TestUploadBuildsPerToken(t *testing.T) {
	b := newBuildEngine()
	b.Hold = make(chan struct{})
	svc, _ := buildsService(t, b, t.TempDir(), "  builds: {allow: true}\n")
	st, err := sandboxrun.UploadStore(svc)
	require.NoError(t, err)
	for _, owner := range []string{ownerA, ownerB} {
		for _, name := range []string{"tab", "tab-two"} {
			_, err = st.Put(owner, skillstore.FormatTar, withPackages(t, name))
			require.NoError(t, err)
		}
	}
	ctx := context.Background()
	errs := make(chan error, 2)
	run := func(owner, name string) {
		_, err := svc.For(sandboxrun.Caller{Owner: owner}).RunScript(ctx, name, "scripts/t.py", sandboxrun.Request{})
		errs <- err
	}
	var release sync.Once
	unhold := func() { release.Do(func() { close(b.Hold) }) }
	t.Cleanup(unhold) // a failing test does not leave builds waiting
	go run(ownerA, "tab")
	<-b.Started
	// Bounded: without the limit, this build would wait on hold.
	second, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = svc.For(sandboxrun.Caller{Owner: ownerA}).RunScript(second, "tab-two", "scripts/t.py", sandboxrun.Request{})
	require.ErrorIs(t, err, sandboxrun.ErrUploadBuildsBusy)
	require.ErrorContains(t, err, "skill_uploads.builds.max_concurrent_per_token")

	go run(ownerB, "tab-two")
	select {
	case <-b.Started:
	case <-time.After(10 * time.Second):
		t.Fatal("B's build did not start while A's ran")
	}
	unhold()
	for range 2 {
		require.ErrorIs(t, <-errs, sandboxrun.ErrUploadBuild)
	}
	_, err = svc.For(sandboxrun.Caller{Owner: ownerA}).RunScript(ctx, "tab-two", "scripts/t.py", sandboxrun.Request{})
	require.ErrorIs(t, err, sandboxrun.ErrUploadBuild, "A's slot is free again")
}

// An operator skill builds as before, whatever skill_uploads.builds says,
// and its failure is no upload's.
func TestOperatorSkillsBuildAsBefore(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tab")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: tab\ndescription: Tabulates. Use it in tests.\nmetadata:\n  python_packages: \"tabulate\"\n---\nbody\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "t.py"), []byte("print(1)\n"), 0o644))
	b := newBuildEngine()
	pol, err := policy.ParsePolicy("p.yaml", []byte("skill_uploads:\n  allow: tokens\n  store: "+t.TempDir()+"\n"))
	require.NoError(t, err)
	svc, _ := newService(t, sandboxrun.Config{SkillRoots: []string{root}, Policy: pol,
		Images: b.Client()})
	_, err = svc.For(sandboxrun.Caller{Owner: ownerA}).RunScript(context.Background(), "tab", "scripts/t.py", sandboxrun.Request{})
	require.ErrorIs(t, err, images.ErrSkillBuild)
	require.NotErrorIs(t, err, sandboxrun.ErrUploadBuild)
	require.Len(t, b.Started, 1, "built")
}
