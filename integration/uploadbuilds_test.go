//go:build integration

package integration

import (
	"archive/tar"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// tabTar is an upload declaring python_packages: tabulate.
func tabTar(t *testing.T, name string) []byte {
	files := map[string]string{
		"SKILL.md":       "---\nname: " + name + "\ndescription: Tabulates. Use it to test uploads.\nmetadata:\n  python_packages: \"tabulate\"\n---\nRun scripts/say.py.\n",
		"scripts/say.py": "print('hi')\n",
	}
	var entries []tarEntry
	for n, body := range files {
		entries = append(entries, tarEntry{hdr: tar.Header{Name: name + "/" + n}, body: []byte(body)})
	}
	return makeTar(t, entries...)
}

// A real server and engine: an upload declaring packages is a 403 naming
// the key by default; with builds allowed and an empty wheel folder as
// the only source, the real build fails at pip and the answer is a 422
// that names neither the wheel folder nor any other host folder.
func TestUploadBuildsOnTheRealEngine(t *testing.T) {
	t.Run("off by default", func(t *testing.T) {
		u := startUploadServer(t, "")
		status, b := u.do(t, "POST", "/v1/skills", "application/x-tar", tabTar(t, "up-tab-off"))
		require.Equal(t, http.StatusForbidden, status, string(b))
		require.Contains(t, string(b), "skill_uploads.builds.allow: true")
	})

	t.Run("an impossible package is the skill's problem", func(t *testing.T) {
		wheels := filepath.Join(t.TempDir(), "empty-wheelhouse")
		require.NoError(t, os.Mkdir(wheels, 0o755))
		u := startUploadServer(t, "", "  builds: {allow: true, timeout: 5m}\n", "build:\n  find_links: "+wheels+"\n")
		u.upload(t, "application/x-tar", tabTar(t, "up-tab"), http.StatusCreated)
		status, b := u.do(t, "POST", "/v1/skills/up-tab/run", "application/json", []byte(`{"script": "scripts/say.py"}`))
		require.Equal(t, http.StatusUnprocessableEntity, status, string(b))
		body := string(b)
		require.Contains(t, body, "pip install step exited")
		require.Contains(t, body, "the server's wheel folder")
		require.NotContains(t, body, wheels)
		require.NotContains(t, body, u.store)
	})
}
