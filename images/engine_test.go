package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/images/imageapi"
)

// fakeEngine is an engine of images held in memory. It records every call
// and fails, loudly, on any call a test did not give it the means for.
type fakeEngine struct {
	mu     sync.Mutex
	images map[string]imageapi.Image // by ref and by ID
	calls  []string
	// pingErr and inspectErr, when set, are what Ping and ImageInspect
	// return.
	pingErr, inspectErr error
	list                []imageapi.Image
	// build, imp and run stand in for the calls that take streams.
	build  func(ctx context.Context, buildContext io.Reader, o imageapi.Build, out io.Writer) (string, error)
	imp    func(rootfs io.Reader, o imageapi.Import) (string, error)
	copyTo func(dir string, content io.Reader) error
	run    func(stdout, stderr io.Writer) (int, error)
}

var _ Engine = (*fakeEngine)(nil)

func newFakeEngine(t *testing.T) *fakeEngine {
	return &fakeEngine{images: map[string]imageapi.Image{}}
}

// client is a Client over f.
func (f *fakeEngine) client() *Client {
	return New(func() (Engine, error) { return f, nil })
}

func (f *fakeEngine) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeEngine) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeEngine) add(img imageapi.Image) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images[img.ID] = img
	for _, r := range img.RepoTags {
		f.images[r] = img
	}
}

func (f *fakeEngine) Ping(context.Context) error { f.record("ping"); return f.pingErr }

func (f *fakeEngine) ImageInspect(_ context.Context, ref string) (imageapi.Image, error) {
	f.record("inspect %s", ref)
	if f.inspectErr != nil {
		return imageapi.Image{}, f.inspectErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if img, ok := f.images[ref]; ok {
		return img, nil
	}
	// The engine also knows an image by a short ID.
	for _, img := range f.images {
		if len(ref) >= 12 && strings.HasPrefix(strings.TrimPrefix(img.ID, "sha256:"), ref) {
			return img, nil
		}
	}
	return imageapi.Image{}, fmt.Errorf("no such image %s: %w", ref, imageapi.ErrNotFound)
}

func (f *fakeEngine) ImageList(_ context.Context, label, value string) ([]imageapi.Image, error) {
	f.record("list %s=%s", label, value)
	return f.list, nil
}

func (f *fakeEngine) ImageTag(_ context.Context, id, ref string) error {
	f.record("tag %s %s", id, ref)
	f.mu.Lock()
	defer f.mu.Unlock()
	img := f.images[id]
	img.RepoTags = append(img.RepoTags, ref)
	f.images[id], f.images[ref] = img, img
	return nil
}

func (f *fakeEngine) ImageRemove(_ context.Context, ref string) error {
	f.record("rm %s", ref)
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.images, ref)
	for k, img := range f.images {
		if strings.HasPrefix(strings.TrimPrefix(img.ID, "sha256:"), ref) {
			delete(f.images, k)
		}
	}
	return nil
}

func (f *fakeEngine) ImagePull(_ context.Context, ref string, _ io.Writer) error {
	f.record("pull %s", ref)
	return errors.New("no registry in unit tests")
}

func (f *fakeEngine) ImageImport(_ context.Context, rootfs io.Reader, o imageapi.Import) (string, error) {
	f.record("import")
	return f.imp(rootfs, o)
}

func (f *fakeEngine) ImageBuild(ctx context.Context, buildContext io.Reader, o imageapi.Build, out io.Writer) (string, error) {
	f.record("build %s", o.Tag)
	return f.build(ctx, buildContext, o, out)
}

func (f *fakeEngine) ContainerCreate(_ context.Context, c imageapi.Container) (string, error) {
	f.record("create %s caps=%s mem=%d pids=%d", c.Name, strings.Join(c.CapAdd, ","), c.MemoryBytes, c.PidsLimit)
	return "c0ffee", nil
}

func (f *fakeEngine) ContainerCopyTo(_ context.Context, id, dir string, content io.Reader) error {
	f.record("cp %s %s", id, dir)
	return f.copyTo(dir, content)
}

func (f *fakeEngine) ContainerRun(_ context.Context, id string, stdout, stderr io.Writer) (int, error) {
	f.record("run %s", id)
	return f.run(stdout, stderr)
}

func (f *fakeEngine) ContainerCommit(_ context.Context, id string, o imageapi.Commit) (string, error) {
	f.record("commit %s %s", id, o.Ref)
	return "sha256:committed", nil
}

func (f *fakeEngine) ContainerRemove(_ context.Context, name string) error {
	f.record("rm-container %s", name)
	return nil
}

// tarFiles reads a tar stream into name → content and name → mode.
func tarFiles(t *testing.T, r io.Reader) (map[string]string, map[string]int64) {
	t.Helper()
	files, modes := map[string]string{}, map[string]int64{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, modes
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name], modes[h.Name] = string(b), h.Mode
	}
}

func TestInspectImageSaysWhy(t *testing.T) {
	f := newFakeEngine(t)
	f.add(imageapi.Image{ID: "sha256:aaa", RepoTags: []string{"x:1"}, Labels: map[string]string{LabelKind: KindRunner}})

	id, labels, err := f.client().Inspect(context.Background(), "x:1")
	require.NoError(t, err)
	require.Equal(t, "sha256:aaa", id)
	require.Equal(t, KindRunner, labels[LabelKind])

	_, _, err = f.client().Inspect(context.Background(), "missing:1")
	require.ErrorIs(t, err, ErrNotFound)
	require.NotErrorIs(t, err, ErrNoDocker)

	_, _, err = f.client().Inspect(context.Background(), "-x")
	require.ErrorContains(t, err, "starts with '-'")

	f.inspectErr, f.pingErr = errors.New("connection refused"), errors.New("connection refused")
	_, _, err = f.client().Inspect(context.Background(), "x:1")
	require.ErrorIs(t, err, ErrNoDocker, "a daemon that does not answer is not a missing image")
	require.ErrorContains(t, err, "docker daemon unreachable")

	f.pingErr = nil
	_, _, err = f.client().Inspect(context.Background(), "x:1")
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrNotFound)
	require.NotErrorIs(t, err, ErrNoDocker)
}

func TestRemoveIfUntaggedKeepsNamedImages(t *testing.T) {
	f := newFakeEngine(t)
	f.add(imageapi.Image{ID: "sha256:tagged", RepoTags: []string{"x:1"}})
	f.add(imageapi.Image{ID: "sha256:loose"})

	require.NoError(t, f.client().removeIfUntagged(context.Background(), "sha256:tagged"))
	require.NoError(t, f.client().removeIfUntagged(context.Background(), "sha256:loose"))
	require.NoError(t, f.client().removeIfUntagged(context.Background(), "sha256:gone"))
	require.NoError(t, f.client().removeIfUntagged(context.Background(), ""))
	require.Equal(t, []string{"inspect sha256:tagged", "inspect sha256:loose", "rm sha256:loose", "inspect sha256:gone"}, f.Calls())
}

func TestBuildImageSendsOnlyItsContext(t *testing.T) {
	f := newFakeEngine(t)
	f.add(imageapi.Image{ID: "sha256:built", RepoTags: []string{"sandboxrun/runner:t"}})
	f.build = func(_ context.Context, buildContext io.Reader, o imageapi.Build, _ io.Writer) (string, error) {
		files, modes := tarFiles(t, buildContext)
		require.Len(t, files, 2, "the Dockerfile and the one file, nothing else")
		require.Contains(t, files["Dockerfile"], "FROM scratch\n")
		require.Contains(t, files["Dockerfile"], `LABEL io.sandboxrun.kind="runner"`)
		require.Equal(t, "\x7fELF", files["sandbox-init"])
		require.Equal(t, int64(0o755), modes["sandbox-init"], "the sandbox user must be able to run it")
		require.Equal(t, "Dockerfile", o.Dockerfile)
		require.Equal(t, map[string]string{"BASE": "b"}, o.BuildArgs)
		return "sha256:built", nil
	}
	id, err := f.client().buildImage(context.Background(), buildRequest{
		tag: "sandboxrun/runner:t", dockerfile: []byte("FROM scratch\n"),
		files: map[string][]byte{"sandbox-init": []byte("\x7fELF")}, buildArgs: map[string]string{"BASE": "b"},
		labels: map[string]string{LabelKind: KindRunner},
	}, newReporter(nil, nil))
	require.NoError(t, err)
	require.Equal(t, "sha256:built", id)
}

func TestFailedBuildRemovesItsStepImages(t *testing.T) {
	f := newFakeEngine(t)
	for _, id := range []string{"sha256:111111111111", "sha256:222222222222", "sha256:333333333333"} {
		f.add(imageapi.Image{ID: id})
	}
	f.build = func(_ context.Context, _ io.Reader, _ imageapi.Build, out io.Writer) (string, error) {
		// The classic builder prints each step's image; the first is the
		// base, which stays.
		_, _ = io.WriteString(out, "Step 1/3 : FROM base\n ---> 111111111111\nStep 2/3 : RUN a\n ---> 222222222222\n")
		_, _ = io.WriteString(out, "Step 3/3 : RUN b\n ---> Running in x\n ---> 333333333333\n")
		return "", &imageapi.StepError{Code: 7, Message: "The command '/bin/sh -c exit 7' returned a non-zero code: 7"}
	}
	var out bytes.Buffer
	_, err := f.client().buildImage(context.Background(), buildRequest{tag: "t:1", dockerfile: []byte("FROM base\n"), baseID: "sha256:111111111111"},
		newReporter(&out, nil))
	require.ErrorContains(t, err, "building t:1")
	require.ErrorContains(t, err, "non-zero code: 7")
	var cmdErr *CommandError
	require.ErrorAs(t, err, &cmdErr)
	require.Equal(t, 7, cmdErr.ExitCode)
	require.Contains(t, out.String(), "Step 2/3", "the build's output reaches the progress writer")
	calls := f.Calls()
	require.Contains(t, calls, "rm sha256:333333333333")
	require.Contains(t, calls, "rm sha256:222222222222")
	require.NotContains(t, calls, "rm sha256:111111111111", "the base is never removed")
	require.Less(t, slices.Index(calls, "rm sha256:333333333333"), slices.Index(calls, "rm sha256:222222222222"), "newest first")
}

func TestImportRootfsTagsOnlyAWholeImport(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc", "os-release"), []byte("ID=debian\n"), 0o644))
	p := bootstrapPlan{Mirror: "http://deb.example/debian", Suite: "bookworm", Tag: "sandboxrun/base:bookworm", Hash: "sha256:h"}

	f := newFakeEngine(t)
	f.imp = func(rootfs io.Reader, o imageapi.Import) (string, error) {
		files, _ := tarFiles(t, rootfs)
		_, _ = io.Copy(io.Discard, rootfs) // the engine reads the body to its end
		require.Equal(t, "ID=debian\n", files["./etc/os-release"])
		require.Contains(t, o.Changes, "ENV LANG=C.UTF-8")
		require.Contains(t, o.Message, "debootstrap --variant=minbase bookworm")
		f.add(imageapi.Image{ID: "sha256:new"})
		return "sha256:new", nil
	}
	base, err := f.client().importRootfs(context.Background(), root, p)
	require.NoError(t, err)
	require.Equal(t, baseImage{Ref: p.Tag, ID: "sha256:new"}, base)
	require.Contains(t, f.Calls(), "tag sha256:new sandboxrun/base:bookworm")

	f = newFakeEngine(t)
	f.imp = func(rootfs io.Reader, _ imageapi.Import) (string, error) {
		_, _ = io.CopyN(io.Discard, rootfs, 512)
		return "", errors.New("unexpected EOF")
	}
	_, err = f.client().importRootfs(context.Background(), root, p)
	require.ErrorContains(t, err, "unexpected EOF")
	for _, c := range f.Calls() {
		require.False(t, strings.HasPrefix(c, "tag "), "a failed import is never tagged: %v", f.Calls())
	}
}

func TestBuildContainerRunAndInputs(t *testing.T) {
	f := newFakeEngine(t)
	f.run = func(stdout, _ io.Writer) (int, error) {
		_, _ = io.WriteString(stdout, "installing\n")
		return 3, nil
	}
	var out bytes.Buffer
	err := runBuildContainer(context.Background(), f, "c0ffee", "sandboxrun-build-x", &out, io.Discard)
	var cmdErr *CommandError
	require.ErrorAs(t, err, &cmdErr)
	require.Equal(t, 3, cmdErr.ExitCode, "the step tracker names the failed step from the exit code")
	require.Equal(t, "installing\n", out.String())

	f.run = func(io.Writer, io.Writer) (int, error) { return 0, nil }
	require.NoError(t, runBuildContainer(context.Background(), f, "c0ffee", "n", io.Discard, io.Discard))

	f.copyTo = func(dir string, content io.Reader) error {
		require.Equal(t, "/tmp", dir)
		files, _ := tarFiles(t, content)
		require.Equal(t, "echo hi\n", files[strings.TrimPrefix(buildDir, "/tmp/")+"/build.sh"])
		return nil
	}
	require.NoError(t, copyBuildInputs(context.Background(), f, "c0ffee", "n", "echo hi\n", nil))

	f.copyTo = func(string, io.Reader) error { return errors.New("no space left on device") }
	err = copyBuildInputs(context.Background(), f, "c0ffee", "n", "echo hi\n", nil)
	require.ErrorContains(t, err, "copying the build inputs into n: no space left on device")
}

func TestListAndPruneTouchOnlySkillImages(t *testing.T) {
	f := newFakeEngine(t)
	f.list = []imageapi.Image{
		{ID: "sha256:runner", RepoTags: []string{"sandboxrun/runner:1"}, Labels: map[string]string{LabelKind: KindRunner}},
		{ID: "sha256:keep", RepoTags: []string{"sandboxrun/skill-a:1"}, Labels: map[string]string{LabelKind: KindSkill, LabelSkill: "a"}},
		{ID: "sha256:drop", RepoTags: []string{"sandboxrun/skill-b:1", "sandboxrun/skill-b:old"}, Labels: map[string]string{LabelKind: KindSkill, LabelSkill: "b"}},
		{ID: "sha256:loose", RepoTags: []string{"<none>:<none>"}, Labels: map[string]string{LabelKind: KindSkill, LabelSkill: "c"}},
	}
	list, err := f.client().List(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 4)
	require.Equal(t, KindRunner, list[0].Kind)
	require.Contains(t, f.Calls(), "list "+LabelManaged+"=true")

	pruned, err := f.client().Prune(context.Background(), func(l Listed) bool { return l.Skill == "a" }, false)
	require.NoError(t, err)
	require.Len(t, pruned, 2)
	calls := f.Calls()
	require.Contains(t, calls, "rm sandboxrun/skill-b:1")
	require.Contains(t, calls, "rm sandboxrun/skill-b:old")
	require.Contains(t, calls, "rm sha256:loose")
	require.NotContains(t, calls, "rm sandboxrun/skill-a:1")
	require.NotContains(t, calls, "rm sandboxrun/runner:1")
}

func TestClientWithoutEngine(t *testing.T) {
	var none *Client
	_, _, err := none.Inspect(context.Background(), "x:1")
	require.ErrorIs(t, err, ErrNoDocker)
	require.ErrorContains(t, err, "no image engine configured")

	dialErr := errors.New("bad DOCKER_HOST")
	c := New(func() (Engine, error) { return nil, dialErr })
	_, _, err = c.Inspect(context.Background(), "x:1")
	require.ErrorIs(t, err, ErrNoDocker)
	require.ErrorIs(t, err, dialErr)
}
