//go:build integration

package integration

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/skillimage"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
)

// These tests build real skill images: apt-get reaches Debian's archive
// from the build container, Python packages come from wheels the tests
// write themselves (there is no PyPI here). Skill names carry the test
// process id, so parallel runs of the suite do not share images.

// writeWheel writes a pure-Python wheel of one module into dir.
func writeWheel(t *testing.T, dir, name, version, source string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	info := name + "-" + version + ".dist-info"
	files := [][2]string{
		{name + "/__init__.py", source},
		{info + "/METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"},
		{info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: sandboxrun-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f[0])
		require.NoError(t, err)
		_, err = w.Write([]byte(f[1]))
		require.NoError(t, err)
		sum := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(f[1]))
	}
	record.WriteString(info + "/RECORD,,\n")
	w, err := zw.Create(info + "/RECORD")
	require.NoError(t, err)
	_, err = w.Write([]byte(record.String()))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+"-"+version+"-py3-none-any.whl"), buf.Bytes(), 0o644))
}

// wheelhouse holds tinypkg 0.1 and tinypkg2 0.2.
func wheelhouse(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeWheel(t, dir, "tinypkg", "0.1", "def greet(n):\n    return 'hello ' + n\n")
	writeWheel(t, dir, "tinypkg2", "0.2", "VALUE = 42\n")
	return dir
}

// depsSkill writes a skill folder named name with extra frontmatter lines.
func depsSkill(t *testing.T, root, name, front string, files map[string]string) *skill.Skill {
	t.Helper()
	dir := filepath.Join(root, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	md := "---\nname: " + name + "\ndescription: Integration test skill with dependencies.\n" + front + "---\nBody.\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644))
	for rel, body := range files {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	sk, err := skill.Load(dir)
	require.NoError(t, err)
	return sk
}

// progress relays build progress to the test log.
type progress struct{ t *testing.T }

func (p progress) Write(b []byte) (int, error) {
	p.t.Helper()
	p.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func dockerCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	require.NoError(t, err, "docker %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// removeImageOnCleanup removes ref when the test ends, whatever happened.
func removeImageOnCleanup(t *testing.T, ref string) {
	t.Cleanup(func() { _ = exec.Command("docker", "image", "rm", "--force", ref).Run() })
}

// requireNoBuildLeftovers asserts that no build container and no untagged
// skill image exist for ref. Untagged images are looked for among the
// images of ref's skill only: other tests build skill images meanwhile.
func requireNoBuildLeftovers(t *testing.T, ref string) {
	t.Helper()
	name := "sandboxrun-build-" + strings.NewReplacer("/", "-", ":", "-").Replace(strings.TrimPrefix(ref, "sandboxrun/"))
	require.Empty(t, dockerCLI(t, "container", "ls", "--all", "--quiet", "--filter", "name=^/"+name+"$"), "build container %s left behind", name)
	skillName, _, ok := strings.Cut(strings.TrimPrefix(ref, "sandboxrun/skill-"), ":")
	require.True(t, ok && strings.HasPrefix(ref, "sandboxrun/skill-"), "%s is not a skill image reference", ref)
	dangling := dockerCLI(t, "image", "ls", "--quiet", "--filter", "dangling=true",
		"--filter", "label="+images.LabelKind+"="+images.KindSkill, "--filter", "label="+images.LabelSkill+"="+skillName)
	require.Empty(t, dangling, "untagged images of skill %s left behind", skillName)
}

func requireNoImage(t *testing.T, ref string) {
	t.Helper()
	_, _, err := testImages.Inspect(context.Background(), ref)
	require.ErrorIs(t, err, images.ErrNotFound, "image %s exists", ref)
}

// buildCtx bounds a test's builds against a hang only: longer than a
// build's own limit (images' buildTimeout, 20 minutes), so on a busy host
// apt-get and pip get the time the product gives them, and a build that
// runs past it fails with the product's own error.
func buildCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func runIn(t *testing.T, sk *skill.Skill, image string, argv ...string) *sandbox.Result {
	t.Helper()
	return run(t, sandbox.Spec{
		Skill:    sk.Manifest.Name,
		SkillDir: sk.Dir,
		Image:    image,
		Argv:     argv,
		Runtime:  filepath.Base(argv[0]),
		Limits:   testLimits(),
	})
}

func TestSkillImage(t *testing.T) {
	t.Parallel()
	ctx := buildCtx(t)
	root := t.TempDir()
	name := fmt.Sprintf("it-deps-%d", os.Getpid())
	wheels := wheelhouse(t)
	const secret = "s3cr3t-token-in-index-url"
	pep723 := "# /// script\n# dependencies = [\"tinypkg2>=0.2\"]\n# ///\nimport tinypkg2\nprint(tinypkg2.VALUE)\n"
	front := "metadata:\n  system_packages: \"bc python3-tabulate\"\n  python_packages: \"tinypkg\"\n"
	sk := depsSkill(t, root, name, front, map[string]string{
		"scripts/calc.sh": "echo '2+3' | bc\n",
		"scripts/pep.py":  pep723,
	})
	opts := skillimage.Options{
		Pip: images.PipConfig{
			// The index is unreachable (the build container's own
			// loopback): pip falls back to the wheelhouse, and the URL
			// with its token must not be stored anywhere in the image.
			IndexURL:  "http://sandboxrun:" + secret + "@127.0.0.1:9/simple",
			FindLinks: []string{wheels},
		},
		Progress: progress{t},
	}

	img, err := imgEnv().Build(ctx, sk, opts)
	require.NoError(t, err)
	removeImageOnCleanup(t, img.Ref)
	require.True(t, img.Built)
	require.True(t, strings.HasPrefix(img.Ref, "sandboxrun/skill-"+name+":"), img.Ref)
	requireNoBuildLeftovers(t, img.Ref)

	t.Run("image configuration is the runner's, labels describe the skill, no secret stored", func(t *testing.T) {
		var cfg struct {
			User       string
			Env        []string
			Entrypoint []string
			Cmd        []string
			WorkingDir string
			Labels     map[string]string
		}
		require.NoError(t, json.Unmarshal([]byte(dockerCLI(t, "image", "inspect", "--format", "{{json .Config}}", img.Ref)), &cfg))
		var rcfg struct {
			User       string
			Env        []string
			Entrypoint []string
			WorkingDir string
		}
		require.NoError(t, json.Unmarshal([]byte(dockerCLI(t, "image", "inspect", "--format", "{{json .Config}}", runner.Image())), &rcfg))
		require.Equal(t, rcfg.User, cfg.User)
		require.Equal(t, rcfg.Env, cfg.Env, "a skill image adds no environment")
		require.Equal(t, rcfg.Entrypoint, cfg.Entrypoint)
		require.Equal(t, rcfg.WorkingDir, cfg.WorkingDir)
		require.Empty(t, cfg.Cmd)
		require.Equal(t, "true", cfg.Labels[images.LabelManaged])
		require.Equal(t, images.KindSkill, cfg.Labels[images.LabelKind])
		require.Equal(t, name, cfg.Labels[images.LabelSkill])
		require.Equal(t, img.ContentHash, cfg.Labels[images.LabelContentHash])
		require.Equal(t, `["tinypkg","tinypkg2>=0.2"]`, cfg.Labels[images.LabelPython])
		require.Equal(t, `["bc","python3-tabulate"]`, cfg.Labels[images.LabelSystem])

		full := dockerCLI(t, "image", "inspect", img.Ref) + dockerCLI(t, "history", "--no-trunc", img.Ref)
		require.NotContains(t, full, secret)
		requireNotInLayers(t, img.Ref, secret)
		require.NotContains(t, full, wheels)
		// The wheelhouse and the script were deleted before the commit.
		res := runIn(t, sk, img.Ref, "bash", "-c", "test ! -e /tmp/sandboxrun-build && ls /var/lib/apt/lists | wc -l")
		require.True(t, res.Success, res.Stderr)
	})

	t.Run("a system package is used by the skill's script", func(t *testing.T) {
		res := runIn(t, sk, img.Ref, "bash", "/skills/"+name+"/scripts/calc.sh")
		require.True(t, res.Success, res.Stderr)
		require.Equal(t, "5\n", res.Stdout)
	})

	t.Run("python3 is the venv's: it imports the wheel, the PEP 723 dependency and a Debian python3 package", func(t *testing.T) {
		require.Equal(t, sandbox.VenvDir, images.VenvPath, "the sandbox's PATH and the image agree")
		res := runIn(t, sk, img.Ref, "python3", "-c",
			"import os, sys, tinypkg, tinypkg2, tabulate; print(os.getuid(), sys.prefix, tinypkg.greet('x'), tinypkg2.VALUE, tabulate.__file__.startswith('/usr/lib/python3/'))")
		require.True(t, res.Success, res.Stderr)
		require.Equal(t, "65532 "+images.VenvPath+" hello x 42 True\n", res.Stdout)

		res = runIn(t, sk, img.Ref, "python3", "/skills/"+name+"/scripts/pep.py")
		require.True(t, res.Success, res.Stderr)
		require.Equal(t, "42\n", res.Stdout)
	})

	t.Run("nothing changed: no build", func(t *testing.T) {
		again, err := imgEnv().Build(ctx, sk, opts)
		require.NoError(t, err)
		require.False(t, again.Built)
		require.Equal(t, img.ID, again.ID)
	})

	t.Run("editing a script does not rebuild", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(sk.Dir, "scripts", "pep.py"), []byte(pep723+"print('edited')\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(sk.Dir, "scripts", "new.py"), []byte("print('new')\n"), 0o644))
		again, err := imgEnv().Build(ctx, sk, opts)
		require.NoError(t, err)
		require.False(t, again.Built)
		require.Equal(t, img.ID, again.ID)
	})

	t.Run("run finds the image without the build's package sources", func(t *testing.T) {
		ref, err := imgEnv().ImageFor(ctx, sk, skillimage.Options{NoBuild: true, Lookup: runner.CheckImage})
		require.NoError(t, err)
		require.Equal(t, img.Ref, ref)
	})

	t.Run("a changed package list rebuilds; prune removes the old image", func(t *testing.T) {
		changed := depsSkill(t, root, name, "metadata:\n  system_packages: \"python3-tabulate\"\n  python_packages: \"tinypkg\"\n",
			map[string]string{"scripts/pep.py": pep723})
		_, err := imgEnv().ImageFor(ctx, changed, skillimage.Options{NoBuild: true})
		require.ErrorIs(t, err, sandboxrun.ErrNeedsBuild)
		require.Contains(t, err.Error(), "sandboxrun build "+changed.Dir)

		wheelsOnly := opts
		wheelsOnly.Pip = images.PipConfig{FindLinks: []string{wheels}}
		rebuilt, err := imgEnv().Build(ctx, changed, wheelsOnly)
		require.NoError(t, err)
		removeImageOnCleanup(t, rebuilt.Ref)
		require.True(t, rebuilt.Built)
		require.NotEqual(t, img.Ref, rebuilt.Ref)
		requireNoBuildLeftovers(t, rebuilt.Ref)
		res := runIn(t, changed, rebuilt.Ref, "bash", "-c", "command -v bc || echo no-bc")
		require.Equal(t, "no-bc\n", res.Stdout)

		// The glue's dry run names the old image and keeps the current one.
		pruned, _, err := imgEnv().Prune(ctx, []string{root}, skillimage.Options{}, true)
		require.NoError(t, err)
		var refs []string
		for _, p := range pruned {
			refs = append(refs, p.Ref)
		}
		require.Contains(t, refs, img.Ref)
		require.NotContains(t, refs, rebuilt.Ref)

		// A real prune, limited to this test's skill: the engine is shared.
		pruned, err = testImages.Prune(ctx, func(l images.Listed) bool { return l.Skill != name || l.Ref == rebuilt.Ref }, false)
		require.NoError(t, err)
		require.Len(t, pruned, 1)
		require.Equal(t, img.Ref, pruned[0].Ref)
		requireNoImage(t, img.Ref)
		list, err := testImages.List(ctx)
		require.NoError(t, err)
		found := false
		for _, l := range list {
			if l.Ref == rebuilt.Ref {
				found = true
				require.Equal(t, images.KindSkill, l.Kind)
				require.Equal(t, []string{"tinypkg", "tinypkg2>=0.2"}, l.PythonPackages)
				require.Positive(t, l.Size)
			}
		}
		require.True(t, found, "%s not listed", rebuilt.Ref)
	})
}

func TestSkillImageBadInput(t *testing.T) {
	t.Parallel()
	ctx := buildCtx(t)
	wheels := wheelhouse(t)
	tests := []struct {
		name  string
		front string
		files map[string]string
		step  string
		want  string
	}{
		{
			name:  "unknown python package",
			front: "metadata:\n  python_packages: \"nosuchpkg-sandboxrun\"\n",
			step:  "installing Python packages",
			want:  "nosuchpkg-sandboxrun",
		},
		{
			name:  "version that does not resolve",
			front: "metadata:\n  python_packages: \"tinypkg==9.9\"\n",
			step:  "installing Python packages",
			want:  "tinypkg==9.9",
		},
		{
			name:  "unknown Debian package",
			front: "metadata:\n  system_packages: \"nosuchpkg-sandboxrun\"\n",
			step:  "installing Debian packages",
			want:  "Unable to locate package nosuchpkg-sandboxrun",
		},
		{
			name:  "requires-python the runner does not satisfy",
			front: "metadata:\n  python_packages: \"tinypkg\"\n",
			files: map[string]string{"scripts/x.py": "# /// script\n# requires-python = \">=3.99\"\n# ///\n"},
			step:  "checking requires-python",
			want:  "not satisfied by Python 3.",
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("it-bad-%d-%d", os.Getpid(), i)
			sk := depsSkill(t, t.TempDir(), name, tt.front, tt.files)
			opts, err := imgEnv().SkillOptions(sk, skillimage.Options{Pip: images.PipConfig{FindLinks: []string{wheels}}, Progress: progress{t}})
			require.NoError(t, err)
			ref, _, err := testImages.SkillRef(ctx, opts)
			require.NoError(t, err)
			removeImageOnCleanup(t, ref)

			_, err = testImages.EnsureSkill(ctx, opts)
			t.Log(err)
			require.ErrorIs(t, err, images.ErrSkillBuild)
			var be *images.SkillBuildError
			require.True(t, errors.As(err, &be))
			require.Contains(t, be.Step, tt.step)
			require.Contains(t, be.Output, tt.want)
			require.Contains(t, err.Error(), tt.want)
			requireNoImage(t, ref)
			requireNoBuildLeftovers(t, ref)
		})
	}

	t.Run("malformed PEP 723 block is refused before Docker", func(t *testing.T) {
		sk := depsSkill(t, t.TempDir(), "it-bad-pep", "", map[string]string{
			"scripts/x.py": "# /// script\n# dependencies = \"tinypkg\"\n# ///\n",
		})
		_, err := imgEnv().ImageFor(ctx, sk, skillimage.Options{})
		require.ErrorIs(t, err, skill.ErrInlineMetadata)
		require.ErrorIs(t, err, sandboxrun.ErrRefused)
		require.Contains(t, err.Error(), "scripts/x.py:2:")
	})
}

func TestSkillImageConcurrentRunsBuildOnce(t *testing.T) {
	t.Parallel()
	ctx := buildCtx(t)
	name := fmt.Sprintf("it-once-%d", os.Getpid())
	sk := depsSkill(t, t.TempDir(), name, "metadata:\n  system_packages: \"bc\"\n", nil)
	opts, err := imgEnv().SkillOptions(sk, skillimage.Options{})
	require.NoError(t, err)
	ref, _, err := testImages.SkillRef(ctx, opts)
	require.NoError(t, err)
	removeImageOnCleanup(t, ref)
	requireNoImage(t, ref)

	// A build killed before its cleanup leaves its container behind; the
	// next build of the same image removes it first.
	leftover := "sandboxrun-build-" + strings.NewReplacer("/", "-", ":", "-").Replace(strings.TrimPrefix(ref, "sandboxrun/"))
	dockerCLI(t, "container", "create", "--name", leftover, runner.Image())
	t.Cleanup(func() { _ = exec.Command("docker", "container", "rm", "--force", leftover).Run() })

	const n = 4
	var wg sync.WaitGroup
	results := make([]images.Image, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = testImages.EnsureSkill(ctx, opts)
		}()
	}
	wg.Wait()
	built := 0
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, results[0].ID, results[i].ID)
		if results[i].Built {
			built++
		}
	}
	require.Equal(t, 1, built, "the image must be built exactly once")
	requireNoBuildLeftovers(t, ref)
}

// stepWatcher closes reached when a progress line contains want.
type stepWatcher struct {
	want    string
	once    sync.Once
	reached chan struct{}
}

func (w *stepWatcher) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.reached) })
	}
	return len(p), nil
}

func TestSkillImageCancelledBuildLeavesNothing(t *testing.T) {
	t.Parallel()
	name := fmt.Sprintf("it-cancel-%d", os.Getpid())
	sk := depsSkill(t, t.TempDir(), name, "metadata:\n  system_packages: \"bc\"\n", nil)
	w := &stepWatcher{want: "installing Debian packages", reached: make(chan struct{})}
	opts, err := imgEnv().SkillOptions(sk, skillimage.Options{Progress: w})
	require.NoError(t, err)
	ref, _, err := testImages.SkillRef(buildCtx(t), opts)
	require.NoError(t, err)
	removeImageOnCleanup(t, ref)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.reached:
		case <-time.After(5 * time.Minute):
		}
		cancel()
	}()
	_, err = testImages.EnsureSkill(ctx, opts)
	require.ErrorIs(t, err, context.Canceled)
	requireNoImage(t, ref)
	requireNoBuildLeftovers(t, ref)
}

// copyExample copies skills/<from> to root/<name>, renamed to name.
func copyExample(t *testing.T, from, root, name string) string {
	t.Helper()
	src := filepath.Join("..", "skills", from)
	dst := filepath.Join(root, name)
	require.NoError(t, filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		rel, err := filepath.Rel(src, p)
		require.NoError(t, err)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		if rel == "SKILL.md" {
			b = bytes.Replace(b, []byte("name: "+from+"\n"), []byte("name: "+name+"\n"), 1)
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	}))
	require.NoError(t, os.Chmod(root, 0o755))
	return dst
}

// The example skill with dependencies, through the CLI: --no-build fails
// fast, two concurrent runs build its image once, later runs use it.
func TestCLISkillWithDependencies(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	name := fmt.Sprintf("it-csv-%d", os.Getpid())
	copyExample(t, "csv-report", root, name)
	args := []string{"--skills", root, "run", name, "scripts/report.py", "--args", `{"sort": "revenue", "descending": true, "limit": 2}`}

	r := cli(t, root, nil, "", append(append([]string{}, args[:3]...), append([]string{"--no-build"}, args[3:]...)...)...)
	require.Equal(t, 3, r.code, r.stderr)
	require.Contains(t, r.stderr, "sandboxrun build "+filepath.Join(root, name))

	var wg sync.WaitGroup
	results := make([]cliResult, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = cli(t, root, nil, "", args...)
		}()
	}
	wg.Wait()
	built := 0
	var ref string
	for _, res := range results {
		require.Equal(t, 0, res.code, res.stderr)
		require.Contains(t, res.stdout, "| region")
		require.Contains(t, res.stdout, "(8 more rows not shown")
		if i := strings.Index(res.stderr, "] built sandboxrun/skill-"+name+":"); i >= 0 {
			built++
			ref = strings.Fields(res.stderr[i+len("] built "):])[0]
		}
	}
	require.Equal(t, 1, built, "two concurrent runs build the image once:\n%s\n---\n%s", results[0].stderr, results[1].stderr)
	removeImageOnCleanup(t, ref)
	requireNoBuildLeftovers(t, ref)

	r = cli(t, root, nil, "", args...)
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "building", "a cached run builds nothing")

	r = cli(t, root, nil, "", "--skills", root, "build", name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, name+": "+ref+" up to date")

	r = cli(t, root, nil, "", "images", "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"ref": "`+ref+`"`)

	r = cli(t, root, nil, "", "--skills", root, "images", "prune", "--dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, ref, "the image of a current skill is kept")
}

// imgEnv names the images as the Service does, on the engine the CLI
// builds them on.
func imgEnv() skillimage.Env {
	return skillimage.Env{RunnerImage: sandboxrun.RunnerImage(), Version: sandboxrun.Version, Images: testImages}
}

// testImages is the image client the CLI uses: the host's Docker engine.
var testImages = backends.Images()
