package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/images/imageapi"
)

func TestStepTracker(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(0, 0)
	rep := newReporter(&out, func() time.Time { return now })
	steps := []buildStep{
		{name: "apt-get update", desc: "updating"},
		{name: "pip install", desc: "installing Python packages: x", hint: "check x"},
	}
	tr := newStepTracker(rep, steps)
	stdout, stderr := tr.stream(), tr.stream()
	_, _ = stdout.Write([]byte(stepMarker + "0\nGet:1 archive\n(Reading 5%\r(Reading 100%\r(Reading done)\r\n"))
	_, _ = stdout.Write([]byte(stepMarker + "1\nLooking in links\nERROR: No matching "))
	_, _ = stderr.Write([]byte("partial from stderr"))
	_, _ = stdout.Write([]byte("distribution found for x\n"))
	stdout.flush()
	stderr.flush()

	text := out.String()
	require.Contains(t, text, "] updating\n")
	require.Contains(t, text, "      Get:1 archive\n")
	require.Contains(t, text, "      (Reading done)\r\n")
	require.NotContains(t, text, "5%", "progress redraws are collapsed")
	require.Contains(t, text, "] apt-get update: done in")
	require.Contains(t, text, "] installing Python packages: x\n")
	require.NotContains(t, text, stepMarker, "markers are not shown")

	cmdErr := &CommandError{Command: []string{"docker", "start"}, ExitCode: 1, Err: errors.New("exit status 1")}
	err := tr.failure(context.Background(), skillPlan{opts: SkillOptions{Skill: "s"}, ref: "sandboxrun/skill-s:1"}, cmdErr)
	var be *SkillBuildError
	require.True(t, errors.As(err, &be))
	require.ErrorIs(t, err, ErrSkillBuild)
	require.Equal(t, "installing Python packages: x", be.Step)
	require.Equal(t, "check x", be.Hint)
	require.Contains(t, be.Output, "ERROR: No matching distribution found for x")
	require.Contains(t, be.Output, "partial from stderr")
	require.NotContains(t, be.Output, "Get:1 archive", "only the failing step's output")
	require.Contains(t, err.Error(), "pip install exited with status 1")
	require.Contains(t, err.Error(), "\nfix: check x")

	t.Run("a cancelled build says so, without a fix", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := tr.failure(ctx, skillPlan{}, cmdErr)
		require.ErrorIs(t, err, context.Canceled)
		require.NotContains(t, err.Error(), "fix:")
	})
}

func TestWriteBuildTar(t *testing.T) {
	wheels := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(wheels, "a-1-py3-none-any.whl"), []byte("AAA"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(wheels, "sub"), 0o700))
	require.NoError(t, os.Symlink(filepath.Join(wheels, "a-1-py3-none-any.whl"), filepath.Join(wheels, "b-1.tar.gz")))
	files, err := listWheelhouse(wheels)
	require.NoError(t, err)
	require.Equal(t, []string{"a-1-py3-none-any.whl", "b-1.tar.gz"}, files, "top-level regular files, symlinks followed")

	var buf bytes.Buffer
	links := []findLinksSource{{value: "https://x/"}, {value: wheels, local: true, files: files}}
	require.NoError(t, writeBuildTar(&buf, "echo hi\n", links))
	tr := tar.NewReader(&buf)
	got := map[string]string{}
	modes := map[string]int64{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		got[h.Name] = string(b)
		modes[h.Name] = h.Mode
	}
	require.Equal(t, map[string]string{
		"sandboxrun-build/":                                  "",
		"sandboxrun-build/build.sh":                          "echo hi\n",
		"sandboxrun-build/find-links/":                       "",
		"sandboxrun-build/find-links/1/":                     "",
		"sandboxrun-build/find-links/1/a-1-py3-none-any.whl": "AAA",
		"sandboxrun-build/find-links/1/b-1.tar.gz":           "AAA",
	}, got)
	require.Equal(t, int64(0o700), modes["sandboxrun-build/build.sh"])
	require.True(t, strings.HasPrefix(buildScript, "/tmp/sandboxrun-build/"), "the tar is extracted into /tmp")
}

func TestListedFrom(t *testing.T) {
	in := imageapi.Image{ID: "sha256:abc", RepoTags: []string{"sandboxrun/skill-x:1", "<none>:<none>"}, Size: 42, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	in.Labels = map[string]string{
		LabelKind: KindSkill, LabelSkill: "x", LabelDepsHash: "sha256:d", LabelContentHash: "sha256:c",
		LabelPython: `["a>=1","b"]`, LabelSystem: `["bc"]`,
	}
	l := listedFrom(in)
	require.Equal(t, "sandboxrun/skill-x:1", l.Ref)
	require.Equal(t, []string{"sandboxrun/skill-x:1"}, l.Tags)
	require.Equal(t, KindSkill, l.Kind)
	require.Equal(t, "x", l.Skill)
	require.Equal(t, []string{"a>=1", "b"}, l.PythonPackages)
	require.Equal(t, []string{"bc"}, l.SystemPackages)
	require.Equal(t, int64(42), l.Size)
	require.Equal(t, 2026, l.Created.Year())

	untagged := listedFrom(imageapi.Image{ID: "sha256:def", RepoTags: nil})
	require.Empty(t, untagged.Ref)
	require.Empty(t, untagged.Tags)
}
