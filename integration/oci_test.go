//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"

	sandboxrun "github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/oci"
	"github.com/sandboxrun/sandboxrun/sandboxtest"
)

// ociState is the oci backend's state folder for the tests: kept between
// test runs, so the runner image is unpacked once per image id.
var ociState = filepath.Join(os.TempDir(), "sandboxrun-oci-integration")

var (
	ociOnce   sync.Once
	ociRunner *oci.Runner
	ociErr    error
)

// ociBackend returns the oci runner with the runner image imported. runc
// must be installed: its absence fails the test.
func ociBackend(t *testing.T) *oci.Runner {
	t.Helper()
	ociOnce.Do(func() { ociRunner, ociErr = newOCIRunner() })
	require.NoError(t, ociErr, "the oci backend needs runc (apt-get install runc) and root")
	return ociRunner
}

func newOCIRunner() (*oci.Runner, error) {
	image := runnerImage()
	r, err := oci.New(oci.WithState(ociState), oci.WithVersion(sandboxrun.Version), oci.WithDefaultImage(image))
	if err != nil {
		return nil, err
	}
	if _, err := r.ImportFromEngine(context.Background(), image); err != nil {
		return nil, err
	}
	return r, nil
}

func runnerImage() string {
	if image := os.Getenv("SANDBOXRUN_IMAGE"); image != "" {
		return image
	}
	return sandboxrun.RunnerImage()
}

// TestOCIConformance runs the backend-neutral contract on the oci backend,
// with no engine involved in the runs, and checks that each run leaves no
// container, cgroup or bundle.
func TestOCIConformance(t *testing.T) {
	t.Parallel()
	r := ociBackend(t)
	warm, err := oci.New(oci.WithState(ociState), oci.WithVersion(sandboxrun.Version), oci.WithDefaultImage(runnerImage()),
		oci.WithWarmPool(1, time.Minute))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, warm.Close()) })
	env := sandboxtest.Env{Runner: r, Warm: warm, Gone: func(t *testing.T, runID string) { requireOCIGone(t, runID) }}
	sandboxtest.Run(t, env)
}

// TestOCICancelLeavesNothing cancels a run mid-script and checks that its
// container, cgroup and bundle are gone when Run returns.
func TestOCICancelLeavesNothing(t *testing.T) {
	t.Parallel()
	r := ociBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	spec := ociSpec(t, "import time\nprint('started', flush=True)\ntime.sleep(60)", nil)
	res, err := r.Run(ctx, spec)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotNil(t, res)
	require.True(t, res.Started)
	requireOCIGone(t, spec.RunID)
}

// TestOCIReap removes a bundle its dead owner left.
func TestOCIReap(t *testing.T) {
	t.Parallel()
	r := ociBackend(t)
	dead := filepath.Join(ociState, "bundles", "sandboxrun-reaptest")
	require.NoError(t, os.MkdirAll(dead, 0o700))
	cfg := `{"ociVersion":"1.0.2","annotations":{"` + sandbox.LabelOwnerPID + `":"999999999","` +
		sandbox.LabelOwnerHost + `":"` + hostname(t) + `","` + sandbox.LabelRunID + `":"reaptest"}}`
	require.NoError(t, os.WriteFile(filepath.Join(dead, "config.json"), []byte(cfg), 0o600))
	got, err := r.Reap(context.Background(), sandbox.ReapOptions{OnlyDeadOwners: true})
	require.NoError(t, err)
	var found bool
	for _, g := range got {
		if g.RunID == "reaptest" {
			found = g.Removed
		}
	}
	require.True(t, found, "the bundle of a dead owner is reaped: %+v", got)
	requireOCIGone(t, "reaptest")
}

func ociSpec(t *testing.T, script string, edit func(*sandbox.Spec)) sandbox.Spec {
	t.Helper()
	dir := sandboxtest.HostSkillDir(t, map[string]string{"scripts/s.py": script})
	id, err := sandbox.NewRunID()
	require.NoError(t, err)
	s := sandbox.Spec{RunID: id, Skill: "t", SkillDir: dir, Argv: []string{"python3", "/skills/t/scripts/s.py"},
		Dir: "/skills/t", Limits: sandboxtest.DefaultLimits()}
	if edit != nil {
		edit(&s)
	}
	return s
}

// requireOCIGone asserts that nothing of the run is left once its
// teardown, which may go on in the background after its Result, is done:
// no runtime state, no bundle, no cgroup in any hierarchy.
func requireOCIGone(t *testing.T, runID string) {
	t.Helper()
	id := "sandboxrun-" + runID
	var left []string
	deadline := time.Now().Add(time.Minute)
	for {
		left = nil
		for _, p := range []string{filepath.Join(ociState, "runtime", id), filepath.Join(ociState, "bundles", id)} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				left = append(left, p)
			}
		}
		cg, err := filepath.Glob("/sys/fs/cgroup/*/sandboxrun/" + runID)
		require.NoError(t, err)
		left = append(left, cg...)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Empty(t, left, "left behind by run %s", runID)
}

// TestOCIFailedStartLeavesNothing runs an image from an OCI layout that
// has no sandboxrun-init: the runtime fails to start the container, the
// run says so, and nothing of it is left.
func TestOCIFailedStartLeavesNothing(t *testing.T) {
	t.Parallel()
	r := ociBackend(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte("ID=empty\n")
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755}))
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "etc/os-release", Mode: 0o644, Size: int64(len(body))}))
	_, err := tw.Write(body)
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	require.NoError(t, err)
	img, err := mutate.AppendLayers(empty.Image, layer)
	require.NoError(t, err)
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	require.NoError(t, err)
	require.NoError(t, p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "sandboxrun-test/empty:1"})))
	id, err := r.Import(context.Background(), "sandboxrun-test/empty:1", dir)
	require.NoError(t, err)
	want, err := img.ConfigName()
	require.NoError(t, err)
	require.Equal(t, want.String(), id, "the image id is its config's digest")

	spec := ociSpec(t, "print('x')", func(s *sandbox.Spec) { s.Image = "sandboxrun-test/empty:1" })
	res, err := r.Run(context.Background(), spec)
	require.ErrorIs(t, err, sandbox.ErrNoReport)
	require.NotNil(t, res)
	require.False(t, res.Success)
	requireOCIGone(t, spec.RunID)
}

// TestOCIWarmPool: a run with a configuration seen before takes a
// container started ahead, which serves it alone; Close removes the idle
// ones, and nothing of any run is left.
func TestOCIWarmPool(t *testing.T) {
	t.Parallel()
	ociBackend(t) // the image is unpacked
	var logs syncBuffer
	r, err := oci.New(oci.WithState(ociState), oci.WithVersion(sandboxrun.Version), oci.WithDefaultImage(runnerImage()),
		oci.WithWarmPool(1, time.Minute), oci.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	require.NoError(t, err)
	dir := sandboxtest.HostSkillDir(t, map[string]string{"scripts/s.py": "import os\nprint(os.environ['SANDBOXRUN_RUN_ID'])"})
	spec := sandbox.Spec{Skill: "t", SkillDir: dir, Argv: []string{"python3", "/skills/t/scripts/s.py"},
		Limits: sandboxtest.DefaultLimits()}
	var ids []string
	for range 3 {
		res, err := r.Run(context.Background(), spec)
		require.NoError(t, err)
		require.True(t, res.Success, "%s %s", res.Stderr, res.Error)
		require.Equal(t, res.ID+"\n", res.Stdout, "the run id names the container it ran in")
		ids = append(ids, res.ID)
		requireOCIGone(t, res.ID)
		require.Eventually(t, func() bool { return r.PoolStats().Ready == 1 }, 30*time.Second, 20*time.Millisecond)
	}
	require.GreaterOrEqual(t, r.PoolStats().Hits, uint64(2), "the second and third runs were warm")
	require.Equal(t, 2, strings.Count(logs.String(), "prestarted=true"), "a warm container started python3 ahead: %s", logs.String())
	require.NoError(t, r.Close())
	entries, err := os.ReadDir(filepath.Join(ociState, "bundles"))
	require.NoError(t, err)
	for _, e := range entries {
		for _, id := range ids {
			require.NotEqual(t, "sandboxrun-"+id, e.Name())
		}
	}
	require.Zero(t, r.PoolStats().Ready)
}

// TestOCIKilledOwnerIsReaped: a sandboxrun SIGKILLed mid-run leaves its
// container running and its bundle mounted; Reap finds them by the owner
// annotations and removes container, cgroup, mounts and bundle.
func TestOCIKilledOwnerIsReaped(t *testing.T) {
	t.Parallel()
	r := ociBackend(t)
	const skill = "oci-killed"
	root := cliSkill(t, skill, "", map[string]string{
		"scripts/wait.py": "import time\nprint('started', flush=True)\ntime.sleep(60)\n",
	})
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("backend: oci\noci:\n  state: "+ociState+"\n"), 0o644))
	cmd := exec.Command(sandboxrunBin(t), "--skills", root, "--policy", pol, "run", "--timeout", "30s", skill, "scripts/wait.py")
	cmd.Dir = root
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	trackOwner(t, cmd.Process.Pid)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make([]byte, len("started\n"))
	_, err = io.ReadFull(stdout, line)
	require.NoError(t, err)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	runID := ""
	entries, err := os.ReadDir(filepath.Join(ociState, "bundles"))
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(ociState, "bundles", e.Name(), "config.json"))
		if err == nil && bytes.Contains(b, []byte(`"`+sandbox.LabelOwnerPID+`":"`+strconv.Itoa(cmd.Process.Pid)+`"`)) {
			runID = strings.TrimPrefix(e.Name(), "sandboxrun-")
		}
	}
	require.NotEmpty(t, runID, "the killed owner's bundle is left")
	reaped, err := r.Reap(context.Background(), sandbox.ReapOptions{OnlyDeadOwners: true})
	require.NoError(t, err)
	var removed bool
	for _, g := range reaped {
		removed = removed || g.RunID == runID && g.Removed
	}
	require.True(t, removed, "reaped: %+v", reaped)
	requireOCIGone(t, runID)
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	require.NotContains(t, string(mounts), "sandboxrun-"+runID, "its mounts are gone")
}
