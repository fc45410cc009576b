//go:build integration

package images

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"

	dockerapi "github.com/sandboxrun/sandboxrun/sandbox/docker"
)

// These tests drive the real engine. The first run on a machine without a
// registry bootstraps the base with debootstrap (minutes): run them with
// `go test -tags integration -timeout 30m ./images/`.

const testRunnerTag = "sandboxrun/runner:integration-test"

// testClient builds on the engine the environment names, through the
// Docker backend's client, as a program using backends/dockerbackend does.
var testClient = New(func() (Engine, error) { return dockerapi.NewImageAPI() })

func requireDocker(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := testClient.checkDocker(ctx); err != nil {
		if os.Getenv("SANDBOXRUN_SKIP_DOCKER") == "1" {
			t.Skipf("SANDBOXRUN_SKIP_DOCKER=1: %v", err)
		}
		t.Fatalf("these tests need a Docker engine (set SANDBOXRUN_SKIP_DOCKER=1 to opt out): %v", err)
	}
}

// docker runs the CLI and returns its combined output.
func docker(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func removeTestImage(t *testing.T, ref string) {
	t.Helper()
	if _, _, err := testClient.Inspect(context.Background(), ref); err == nil {
		out, err := docker(t, "image", "rm", ref)
		require.NoError(t, err, out)
	}
}

// buildInit compiles the real sandbox-init with the Makefile's flags, so
// the image it produces matches the one `make images` builds.
func buildInit(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "sandbox-init")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "./cmd/sandbox-init")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "building sandbox-init: %s", msg)
	return out
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestBuildRunnerTwiceAndRun(t *testing.T) {
	requireDocker(t)
	dockerfile, err := os.ReadFile("../Dockerfile.runner")
	require.NoError(t, err)
	opts := RunnerOptions{
		Tag:        testRunnerTag,
		Version:    "0.0.0-integration",
		Dockerfile: dockerfile,
		InitBinary: buildInit(t),
		Progress:   logWriter{t},
	}
	t.Cleanup(func() { removeTestImage(t, testRunnerTag) })
	removeTestImage(t, testRunnerTag)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	first, err := testClient.BuildRunner(ctx, opts)
	require.NoError(t, err)
	require.True(t, first.Built)
	require.Equal(t, testRunnerTag, first.Ref)
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, first.ID)

	start := time.Now()
	second, err := testClient.BuildRunner(ctx, opts)
	require.NoError(t, err)
	require.False(t, second.Built, "nothing changed, so nothing is built")
	require.Equal(t, first.ID, second.ID)
	require.Equal(t, first.ContentHash, second.ContentHash)
	require.Less(t, time.Since(start), 30*time.Second, "an up-to-date build finishes in seconds")

	id, labels, err := testClient.Inspect(ctx, testRunnerTag)
	require.NoError(t, err)
	require.Equal(t, first.ID, id)
	require.Equal(t, "true", labels[LabelManaged])
	require.Equal(t, KindRunner, labels[LabelKind])
	require.Equal(t, first.ContentHash, labels[LabelContentHash])
	require.Equal(t, "0.0.0-integration", labels[ocispec.AnnotationVersion])
	require.NotEmpty(t, labels[ocispec.AnnotationCreated])

	cfg, err := docker(t, "image", "inspect", "--format", "{{json .Config.Entrypoint}} {{.Config.User}} {{.Config.WorkingDir}}", testRunnerTag)
	require.NoError(t, err, cfg)
	require.Equal(t, `["/usr/local/bin/sandbox-init"] 65532:65532 /workspace`, cfg)

	tests := []struct {
		entrypoint string
		args       []string
		want       string // regexp
	}{
		{"python", []string{"--version"}, `^Python 3\.\d+\.\d+$`},
		{"node", []string{"--version"}, `^v\d+\.\d+\.\d+$`},
		{"jq", []string{"--version"}, `^jq-1\.\d+`},
		{"git", []string{"--version"}, `^git version 2\.`},
		{"bash", []string{"--version"}, `^GNU bash, version 5\.`},
		{"id", []string{"-u"}, `^65532$`},
		{"id", []string{"-g"}, `^65532$`},
		{"sh", []string{"-c", "ls -A /var/lib/apt/lists /var/cache/apt/archives | grep -c deb || true"}, `^0$`},
		{"sh", []string{"-c", "test -x /usr/local/bin/sandbox-init && test -d /skills && pwd"}, `^/workspace$`},
	}
	for _, tt := range tests {
		t.Run(tt.entrypoint+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			args := append([]string{"run", "--rm", "--network", "none", "--read-only", "--entrypoint", tt.entrypoint, testRunnerTag}, tt.args...)
			out, err := docker(t, args...)
			require.NoError(t, err, out)
			require.Regexp(t, tt.want, out)
		})
	}
}

func TestFailedBuildLeavesNoImage(t *testing.T) {
	requireDocker(t)
	const tag = "sandboxrun/runner:integration-fail"
	t.Cleanup(func() { removeTestImage(t, tag) })
	removeTestImage(t, tag)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	base, err := testClient.resolveBase(ctx, RunnerOptions{Base: DefaultBase}, newReporter(logWriter{t}, nil))
	require.NoError(t, err)

	// The LABEL step commits an image with a label value unique to this
	// run (so it is not a cache hit), then RUN fails.
	unique := time.Now().Format(time.RFC3339Nano)
	_, err = testClient.buildImage(ctx, buildRequest{
		tag:        tag,
		dockerfile: []byte("ARG BASE\nFROM ${BASE}\nLABEL io.sandboxrun.test=\"" + unique + "\"\nRUN exit 7\n"),
		buildArgs:  map[string]string{"BASE": base.Ref},
		baseID:     base.ID,
	}, newReporter(logWriter{t}, nil))
	var cmdErr *CommandError
	require.ErrorAs(t, err, &cmdErr)
	require.NotZero(t, cmdErr.ExitCode)

	_, _, err = testClient.Inspect(ctx, tag)
	require.ErrorIs(t, err, ErrNotFound)
	// The LABEL step's image would still be there if its RUN container
	// had not been removed (--force-rm) or if it had not been cleaned up.
	left, err := docker(t, "image", "ls", "--all", "--quiet", "--filter", "label=io.sandboxrun.test="+unique)
	require.NoError(t, err, left)
	require.Empty(t, left, "the failed build left an intermediate image behind")
}
