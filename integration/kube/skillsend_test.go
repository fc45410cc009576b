//go:build kube

package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	kubebackend "github.com/sandboxrun/sandboxrun/sandbox/kube"
	"github.com/sandboxrun/sandboxrun/sandboxtest"
)

// sentSkillScript runs the skill's own script, shows the modes its files
// arrived with, then tries every way of changing them, also after making
// them writable by mode (the script runs under the uid that unpacked
// them), and sums SKILL.md.
const sentSkillScript = `set -u
printf '{"n":1}' | "$SKILL_DIR/scripts/echo.sh"
stat -c '%a %n' "$SKILL_DIR" "$SKILL_DIR/SKILL.md" "$SKILL_DIR/scripts/echo.sh"
try() { if "$@" 2>/dev/null; then echo "wrote: $1"; else echo "denied: $1"; fi; }
try touch "$SKILL_DIR/new"
try sh -c 'echo x >> "$SKILL_DIR/SKILL.md"'
chmod u+w "$SKILL_DIR" "$SKILL_DIR/SKILL.md" "$SKILL_DIR/scripts" "$SKILL_DIR/scripts/echo.sh"
try touch "$SKILL_DIR/new"
try sh -c 'echo x >> "$SKILL_DIR/SKILL.md"'
try truncate -s 0 "$SKILL_DIR/SKILL.md"
try rm "$SKILL_DIR/scripts/echo.sh"
try mv "$SKILL_DIR/SKILL.md" "$SKILL_DIR/moved.md"
sha256sum "$SKILL_DIR/SKILL.md" | cut -c1-64
`

// With kubernetes.skills: send, an operator skill under no claim, with
// host paths off, reaches its Pod over the side channel: the script runs
// it, cannot change it, in a cold Pod and in a warm one started before
// the skill was known, and no Pod is left.
func TestSkillSentOverTheChannel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := copyHello(t)
	send := skillRunner(t, "skill-send", kubebackend.WithHostPaths(false), kubebackend.WithSkillSend(1<<20))
	md, err := os.ReadFile(filepath.Join(dir, "SKILL.md"))
	require.NoError(t, err)
	sum := sha256.Sum256(md)
	want := `{"skill":"hello","runtime":"bash","args":{"n":1}}
555 /skills/hello
444 /skills/hello/SKILL.md
555 /skills/hello/scripts/echo.sh
denied: touch
denied: sh
denied: touch
denied: sh
denied: truncate
denied: rm
denied: mv
` + hex.EncodeToString(sum[:]) + "\n"

	spec := sandbox.Spec{Skill: "hello", SkillDir: dir, Argv: []string{"bash", "-c", sentSkillScript}, Limits: sandboxtest.DefaultLimits()}
	for _, run := range []string{"cold", "warm"} {
		res, err := send.Run(ctx, spec)
		require.NoError(t, err, run)
		require.Equal(t, 0, res.ExitCode, "%s: %s", run, res.Stderr)
		require.Equal(t, want, res.Stdout, run)
		requirePodGone(t, res.ID)
		waitFilled(t, send)
	}
	require.GreaterOrEqual(t, send.PoolStats().Hits, uint64(1), "the second run took a warm pod")

	t.Run("a link leaving the skill is refused before any pod", func(t *testing.T) {
		bad := copyHello(t)
		require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(bad, "scripts", "pw")))
		s := spec
		s.SkillDir = bad
		res, err := send.Run(ctx, s)
		require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
		require.ErrorContains(t, err, "link scripts/pw -> /etc/passwd is absolute")
		require.Nil(t, res)
	})
}

// The time a run takes with its skill sent, against the same run with the
// skill mounted from the node, both in warm Pods that have settled (a
// Pod's start, or a warm Pod taken the moment it is ready, would hide the
// difference): the figures go to the test log. The script prints when it
// started, so the log splits each run into the time to the script's start
// (where the skill's files travel) and the rest.
func TestSkillSentLatency(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := copyHello(t)
	runners := []struct {
		name string
		k    *kubebackend.Runner
	}{
		{"host path", skillRunner(t, "skill-hostpath")},
		{"sent", skillRunner(t, "skill-sent", kubebackend.WithHostPaths(false), kubebackend.WithSkillSend(1<<20))},
	}
	spec := sandbox.Spec{Skill: "hello", SkillDir: dir, Argv: []string{"bash", "-c", "date +%s%N; exec bash /skills/hello/scripts/echo.sh"},
		Stdin: []byte(`{"n":1}`), Limits: sandboxtest.DefaultLimits()}
	spec.Limits.CPUs = 0.5 // two warm Pods and a refill fit on the node
	const rounds = 7
	total, toStart := make([][]time.Duration, len(runners)), make([][]time.Duration, len(runners))
	for i := range rounds + 1 {
		for j, r := range runners {
			if i > 0 { // the first run of each is cold; later ones take a settled warm Pod
				waitFilled(t, r.k)
				time.Sleep(3 * time.Second)
			}
			start := time.Now()
			res, err := r.k.Run(ctx, spec)
			end := time.Now()
			require.NoError(t, err)
			began, out, ok := strings.Cut(res.Stdout, "\n")
			require.True(t, ok, res.Stdout)
			require.Equal(t, `{"skill":"hello","runtime":"bash","args":{"n":1}}`+"\n", out, res.Stderr)
			ns, err := strconv.ParseInt(began, 10, 64)
			require.NoError(t, err)
			if i > 0 {
				total[j] = append(total[j], end.Sub(start))
				toStart[j] = append(toStart[j], time.Unix(0, ns).Sub(start))
			}
		}
	}
	for j, r := range runners {
		slices.Sort(total[j])
		slices.Sort(toStart[j])
		t.Logf("%-9s warm run of skills/hello: median %v (min %v, max %v), to the script's start median %v (%d runs)",
			r.name, total[j][rounds/2].Round(time.Millisecond), total[j][0].Round(time.Millisecond), total[j][rounds-1].Round(time.Millisecond),
			toStart[j][rounds/2].Round(time.Millisecond), rounds)
	}
	require.EqualValues(t, rounds, runners[0].k.PoolStats().Hits)
	require.EqualValues(t, rounds, runners[1].k.PoolStats().Hits)
}

// skillRunner is a runner with a warm pool of one, named owner.
func skillRunner(t *testing.T, owner string, opts ...kubebackend.Option) *kubebackend.Runner {
	t.Helper()
	all := append([]kubebackend.Option{kubebackend.WithRESTConfig(restConfig(t)), kubebackend.WithNamespace(runner.Namespace()),
		kubebackend.WithVersion(sandboxrun.Version), kubebackend.WithDefaultImage(sandboxrun.RunnerImage()),
		kubebackend.WithWarmPool(1, 2*time.Minute), kubebackend.WithOwnerHost(owner)}, opts...)
	k, err := kubebackend.New(all...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, k.Close()) })
	return k
}

// copyHello is a copy of the repository's skills/hello in a folder the
// node and the sandbox user can read.
func copyHello(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(sandboxtest.HostDir(t), "hello")
	require.NoError(t, os.CopyFS(dst, os.DirFS("../../skills/hello")))
	require.NoError(t, filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return os.Chmod(p, 0o755) //nolint:gosec // the sandbox user reads it
		}
		return nil
	}))
	return dst
}
