package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/images/imagetest"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/server"
)

// noSkillImages is engine with only the runner image built: a skill with
// packages needs its image built.
type noSkillImages struct{ engine }

func (e *noSkillImages) CheckImage(_ context.Context, ref string) (string, error) {
	if ref == sandboxrun.RunnerImage() {
		return "sha256:runner", nil
	}
	return "", sandbox.ErrImageNotFound
}

// startBuilds serves uploads (policy lines added) whose image builds fail
// in b at pip, with pip pointed at a wheel folder of the host.
func startBuilds(t *testing.T, b *imagetest.FailingBuilds, lines string) (url, wheels string) {
	t.Helper()
	pol, err := policy.ParsePolicy("p.yaml", []byte("skill_uploads:\n  allow: tokens\n  store: "+t.TempDir()+"\n"+lines))
	require.NoError(t, err)
	wheels = filepath.Join(t.TempDir(), "wheelhouse")
	require.NoError(t, os.Mkdir(wheels, 0o755))
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: &noSkillImages{}, Policy: pol,
		Pip: images.PipConfig{FindLinks: []string{wheels}}, Images: b.Client()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA, tokenB)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL, wheels
}

func tabulating(name string) map[string]string {
	return map[string]string{
		"SKILL.md":     "---\nname: " + name + "\ndescription: Tabulates. Use it in tests.\nmetadata:\n  python_packages: \"tabulate\"\n---\nRun scripts/t.py.\n",
		"scripts/t.py": "print(1)\n",
	}
}

// By default an upload declaring python_packages is a 403 naming the key
// that allows builds; nothing is built.
func TestUploadDeclaringPackagesIsRefusedByDefault(t *testing.T) {
	b := imagetest.NewFailingBuilds(sandboxrun.RunnerImage(), "sha256:runner", "tabulate")
	url, _ := startBuilds(t, b, "")
	r := call(t, "POST", url+"/v1/skills", skillTar(t, tabulating("tab")), append(as(tokenA), "Content-Type", "application/x-tar")...)
	require.Equal(t, http.StatusForbidden, r.status, string(r.body))
	requireSchema(t, "Error", r.body)
	require.Contains(t, string(r.body), "skill_uploads.builds.allow: true")
	require.Empty(t, b.Started)
}

// With builds on, a package the server's sources lack is the skill's
// problem: 422, naming the step and pip's error, and no host folder.
func TestUploadBuildOfAnImpossiblePackageIs422(t *testing.T) {
	b := imagetest.NewFailingBuilds(sandboxrun.RunnerImage(), "sha256:runner", "tabulate")
	url, wheels := startBuilds(t, b, "  builds: {allow: true}\n")
	upload(t, url, tokenA, "application/x-tar", skillTar(t, tabulating("tab")), http.StatusCreated)
	r := call(t, "POST", url+"/v1/skills/tab/run", `{"script": "scripts/t.py"}`, as(tokenA)...)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, string(r.body))
	requireSchema(t, "Error", r.body)
	body := string(r.body)
	require.Contains(t, body, "No matching distribution found for tabulate")
	require.Contains(t, body, "the server's wheel folder")
	require.NotContains(t, body, wheels)
	require.NotContains(t, body, filepath.Dir(wheels))
	require.Len(t, b.Started, 1)
}
