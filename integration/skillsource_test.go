//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/skillimage"
)

// writeSdist writes a source-only package whose setup.py records, in the
// installed module, the uid and effective capabilities its build code ran
// with.
func writeSdist(t *testing.T, dir, name string) {
	t.Helper()
	setup := `import os
from setuptools import setup
cap = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
os.makedirs("` + name + `", exist_ok=True)
with open("` + name + `/__init__.py", "w") as f:
    f.write("UID = %d\nCAPEFF = %r\n" % (os.getuid(), cap))
setup(name="` + name + `", version="0.1", packages=["` + name + `"])
`
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for p, body := range map[string]string{
		"setup.py": setup,
		"PKG-INFO": "Metadata-Version: 2.1\nName: " + name + "\nVersion: 0.1\n",
	} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name + "-0.1/" + p, Mode: 0o644, Size: int64(len(body))}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+"-0.1.tar.gz"), buf.Bytes(), 0o644))
}

// TestSkillImageSourceBuilds: a package with only a source archive is
// refused by default (wheels only: no package code runs while building);
// allowed, its build code runs as uid 65532 with no capabilities.
func TestSkillImageSourceBuilds(t *testing.T) {
	t.Parallel()
	ctx := buildCtx(t)
	name := fmt.Sprintf("it-sdist-%d", os.Getpid())
	wheels := t.TempDir()
	writeSdist(t, wheels, "srcpkg")
	sk := depsSkill(t, t.TempDir(), name, "metadata:\n  python_packages: \"srcpkg\"\n", map[string]string{
		"scripts/probe.py": "import srcpkg\nprint(srcpkg.UID, srcpkg.CAPEFF)\n",
	})
	pip := images.PipConfig{FindLinks: []string{wheels}}

	_, err := imgEnv().Build(ctx, sk, skillimage.Options{Pip: pip, Progress: progress{t}})
	require.Error(t, err)
	require.ErrorContains(t, err, "srcpkg")
	require.ErrorContains(t, err, "--allow-source-builds")
	runnerID, err := runner.CheckImage(ctx, runner.Image())
	require.NoError(t, err)
	ref, err := images.SkillTag(images.SkillOptions{Skill: name, Runner: runner.Image(), PythonPackages: []string{"srcpkg"}, Pip: pip}, runnerID)
	require.NoError(t, err)
	requireNoImage(t, ref)
	requireNoBuildLeftovers(t, ref)

	img, err := imgEnv().Build(ctx, sk, skillimage.Options{Pip: pip, Progress: progress{t}, SourceBuilds: true})
	require.NoError(t, err)
	removeImageOnCleanup(t, img.Ref)
	requireNoBuildLeftovers(t, img.Ref)
	res := runIn(t, sk, img.Ref, "python3", "/skills/"+name+"/scripts/probe.py")
	require.True(t, res.Success, res.Stderr)
	require.Equal(t, "65532 0000000000000000\n", res.Stdout, "the package's build code ran as root or with capabilities")

	// Installed files belong to root again: a run cannot change them.
	res = runIn(t, sk, img.Ref, "bash", "-c", "find /opt/sandboxrun/venv -not -user 0 | head -3")
	require.True(t, res.Success, res.Stderr)
	require.Empty(t, res.Stdout)
}

// requireNotInLayers fails when secret appears anywhere in the image: any
// layer's files, its configuration or its history.
func requireNotInLayers(t *testing.T, ref, secret string) {
	t.Helper()
	cmd := exec.Command("docker", "save", ref)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	tr := tar.NewReader(out)
	files := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		files++
		require.NotContains(t, string(data), secret, "%s holds the secret", h.Name)
		if strings.HasSuffix(h.Name, ".tar") || strings.HasSuffix(h.Name, "/layer.tar") {
			lr := tar.NewReader(bytes.NewReader(data))
			for {
				lh, err := lr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				body, err := io.ReadAll(lr)
				require.NoError(t, err)
				require.NotContains(t, string(body), secret, "file %s in layer %s holds the secret", lh.Name, h.Name)
				require.NotContains(t, lh.Name, secret)
			}
		}
	}
	require.NoError(t, cmd.Wait())
	require.Greater(t, files, 2)
}
