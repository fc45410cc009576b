//go:build integration

package integration

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// smallDisk mounts a tmpfs of size MiB at a fresh folder (root needed) and
// unmounts it at the end.
func smallDisk(t *testing.T, mib int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.Mkdir(dir, 0o755))
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm,mode=0755", mib), "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, "mount a small tmpfs for the sessions root (the suite runs as root): %s", out)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// TestFaultsDiskFull: a sessions root on a file system that fills. Uploads
// answer 507, nothing half-written is listed or left, a run whose changes
// cannot be handed back says workspace_full, another session keeps
// working, the metadata stays valid JSON, and freeing space makes uploads
// work again.
func TestFaultsDiskFull(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, 24)
	srv := startSessionServer(t, filepath.Join(disk, "sessions"))
	full, other := srv.create(t, ""), srv.create(t, "")
	keep := randomBytes(t, 512<<10)
	srv.put(t, other.ID, "keep.bin", keep)

	var acked []string
	var last call
	for i := range 20 {
		p := fmt.Sprintf("fill-%d.bin", i)
		data := randomBytes(t, 3<<20)
		last = srv.do(t, "PUT", "/v1/sessions/"+full.ID+"/files/"+p, strings.NewReader(string(data)))
		if last.status != http.StatusCreated {
			break
		}
		acked = append(acked, p)
	}
	t.Logf("after %d uploads of 3 MiB: %s", len(acked), last)
	require.Equal(t, http.StatusInsufficientStorage, last.status, last.String())
	require.Contains(t, string(last.body), "space")
	requireOnlyAcked := func() {
		t.Helper()
		byPath := entries(srv.list(t, full.ID))
		for p := range byPath {
			require.False(t, strings.HasPrefix(filepath.Base(p), ".sandboxrun-"), "temporary %s listed", p)
			if strings.HasPrefix(p, "fill-") {
				require.Contains(t, acked, p, "only acknowledged uploads are listed")
			}
		}
		require.Empty(t, tempNames(t, srv.workspace(full.ID)), "nothing half-written on disk")
	}
	requireOnlyAcked()
	// A tar upload fails the same way.
	tarball := makeTar(t, tarEntry{hdr: tar.Header{Name: "t/a.bin"}, body: randomBytes(t, 6<<20)})
	c := srv.do(t, "PUT", "/v1/sessions/"+full.ID+"/files", strings.NewReader(string(tarball)), "Content-Type", "application/x-tar")
	require.Equal(t, http.StatusInsufficientStorage, c.status, c.String())
	requireOnlyAcked()

	// A run that writes within its quota, whose changes do not fit on the
	// host: a Result that says so, not a server error.
	c = srv.pythonCall(t, full.ID, "open('big.bin', 'wb').write(b'x' * (8 << 20))\nprint('wrote')")
	t.Logf("run writing 8 MiB on a full disk: %.600s", c)
	require.Equal(t, http.StatusOK, c.status, c.String())
	var res struct {
		Success       bool   `json:"success"`
		WorkspaceFull bool   `json:"workspace_full"`
		Error         string `json:"error"`
		Stdout        string `json:"stdout"`
	}
	require.NoError(t, json.Unmarshal(c.body, &res))
	require.True(t, res.WorkspaceFull, c.String())
	require.False(t, res.Success)
	require.NotContains(t, entries(srv.list(t, full.ID)), "big.bin", "a change not handed back is not listed")
	requireOnlyAcked()

	// The other session still works: its file, a run that reads it.
	require.Equal(t, sha(keep), sha(srv.get(t, other.ID, "keep.bin")))
	r := srv.python(t, other.ID, "print(len(open('keep.bin', 'rb').read()))")
	require.True(t, r.Success, r.Stderr)
	require.Equal(t, fmt.Sprintf("%d\n", len(keep)), r.Stdout)

	// The metadata is valid JSON throughout.
	metas, err := filepath.Glob(filepath.Join(srv.dir, "meta", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, metas)
	for _, m := range metas {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		require.True(t, json.Valid(b), "%s is valid JSON: %q", m, b)
	}

	// Space freed: uploads work again.
	for _, p := range acked {
		c := srv.do(t, "DELETE", "/v1/sessions/"+full.ID+"/files/"+p, nil)
		require.Equal(t, http.StatusNoContent, c.status, c.String())
	}
	srv.put(t, full.ID, "after.bin", randomBytes(t, 3<<20))
	require.Equal(t, int64(3<<20+len(keep)), srv.info(t, full.ID).BytesUsed+srv.info(t, other.ID).BytesUsed)
}
