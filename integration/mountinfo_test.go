//go:build integration

package integration

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMountinfoOfAnUploadedSkill reads /proc/self/mountinfo in the
// sandbox of tenant A's uploaded skill, with tenant B's upload in the same
// store, and checks what docs/security.md says a sandbox learns of its
// host: the bind sources of its own mounts (the skill's folder in the
// upload store), never a token in the clear and nothing of another
// tenant.
func TestMountinfoOfAnUploadedSkill(t *testing.T) {
	t.Parallel()
	u := startUploadServer(t, "")
	files := map[string]string{
		"SKILL.md":          "---\nname: up-mounts\ndescription: Prints its mounts. Use it to test what a sandbox sees.\n---\nRun scripts/mounts.py.\n",
		"scripts/mounts.py": "print(open('/proc/self/mountinfo').read())\n",
	}
	var entries []tarEntry
	for name, body := range files {
		entries = append(entries, tarEntry{hdr: tar.Header{Name: "up-mounts/" + name}, body: []byte(body)})
	}
	u.upload(t, "application/x-tar", makeTar(t, entries...), http.StatusCreated)
	u.as(upTokenB).upload(t, "application/x-tar", sayTar(t, "b-secret-word"), http.StatusCreated)

	status, b := u.do(t, "POST", "/v1/skills/up-mounts/run", "application/json", []byte(`{"script": "scripts/mounts.py"}`))
	require.Equal(t, http.StatusOK, status, string(b))
	out := string(b)
	require.Contains(t, out, " /skills/up-mounts ", "the Result carries the sandbox's mountinfo")

	digest := func(tok string) string { d := sha256.Sum256([]byte(tok)); return hex.EncodeToString(d[:]) }
	for what, s := range map[string]string{
		"token A": upTokenA, "token B": upTokenB, "token B's digest": digest(upTokenB),
		"B's skill": "up-say", "the audit log": u.audit, "the tokens file": u.tokens,
	} {
		require.NotContains(t, out, s, "a sandbox sees %s in its mountinfo", what)
	}
	// What it does see, as docs/security.md says: the bind source of its
	// skill folder, a path in the upload store that names its caller's own
	// namespace (the digest of the caller's token).
	require.Contains(t, out, digest(upTokenA), "docs/security.md says the caller's own namespace shows; update both together")
}
