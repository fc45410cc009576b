//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Two real replicas sharing one upload store (a folder both mount, as a
// ReadWriteMany claim gives them), each with its own sessions root.

func startSharedUploads(t *testing.T) (*replicaSet, string) {
	t.Helper()
	dir := t.TempDir()
	store := filepath.Join(dir, "uploads")
	pol := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("skill_uploads:\n  allow: tokens\n  store: "+store+"\n"), 0o600))
	return startReplicas(t, "--policy", pol), store
}

func (s *sessServer) uploadSkill(t *testing.T, body []byte, want int) upVersion {
	t.Helper()
	c := s.do(t, "POST", "/v1/skills", bytes.NewReader(body), "Content-Type", "application/x-tar")
	require.Equal(t, want, c.status, c.String())
	var v upVersion
	require.NoError(t, json.Unmarshal(c.body, &v))
	return v
}

func (s *sessServer) runUpload(t *testing.T, ref string) (call, sandbox.Result) {
	t.Helper()
	c := s.do(t, "POST", "/v1/skills/"+ref+"/run", bytes.NewReader([]byte(`{"script": "scripts/say.py"}`)))
	var res sandbox.Result
	if c.status == http.StatusOK {
		require.NoError(t, json.Unmarshal(c.body, &res), c.String())
	}
	return c, res
}

func (s *sessServer) uploadedVersions(t *testing.T) []string {
	t.Helper()
	c := s.do(t, "GET", "/v1/skills/up-say/versions", nil)
	if c.status == http.StatusNotFound {
		return nil
	}
	require.Equal(t, http.StatusOK, c.status, c.String())
	var vs struct {
		Versions []upVersion `json:"versions"`
	}
	require.NoError(t, json.Unmarshal(c.body, &vs), c.String())
	var out []string
	for _, v := range vs.Versions {
		out = append(out, v.Version)
	}
	return out
}

// TestUploadsOnEveryReplica: an upload through r-0 is listed, run, pinned
// and deleted through r-1 as soon as its 201 is answered, and outlives r-0.
func TestUploadsOnEveryReplica(t *testing.T) {
	t.Parallel()
	rs, store := startSharedUploads(t)
	r0, r1 := rs.srv[0], rs.srv[1]

	v1 := r0.uploadSkill(t, sayTar(t, "one"), http.StatusCreated)
	answered := time.Now()
	require.Equal(t, []string{"1"}, r1.uploadedVersions(t), "r-1 lists what r-0 took, at the first ask after the 201")
	t.Logf("upload 201 on r-0 to its listing on r-1: %s (the first list asked)", time.Since(answered).Round(time.Microsecond))
	c, res := r1.runUpload(t, "up-say")
	require.Equal(t, http.StatusOK, c.status, c.String())
	require.Equal(t, "one\n", res.Stdout)
	require.Equal(t, v1.Digest, res.SkillDigest)

	// A second version through r-1 is numbered after r-0's; both pins work
	// through either replica.
	v2 := r1.uploadSkill(t, sayTar(t, "two"), http.StatusCreated)
	require.Equal(t, "2", v2.Version)
	again := r0.uploadSkill(t, sayTar(t, "one"), http.StatusOK)
	require.Equal(t, v1.Version, again.Version, "the same content through the other replica is the stored version")
	for _, s := range rs.srv {
		for ref, want := range map[string]string{"up-say@1": "one\n", "up-say@" + v2.Digest: "two\n", "up-say": "two\n"} {
			c, res := s.runUpload(t, ref)
			require.Equal(t, http.StatusOK, c.status, c.String())
			require.Equal(t, want, res.Stdout, ref)
		}
	}
	// Another token sees none of it through either.
	for _, s := range rs.srv {
		c := s.doAs(t, replicaTokenB, "GET", "/v1/skills/up-say/versions", nil)
		require.Equal(t, http.StatusNotFound, c.status, c.String())
	}

	// Deleted through r-1: gone through r-0.
	c = r1.do(t, "DELETE", "/v1/skills/up-say/versions/1", nil)
	require.Equal(t, http.StatusNoContent, c.status, c.String())
	require.Equal(t, []string{"2"}, r0.uploadedVersions(t))
	c, _ = r0.runUpload(t, "up-say@1")
	require.Equal(t, http.StatusNotFound, c.status, c.String())

	// r-0 dies: what it took is on the shared folder, and r-1 runs it.
	v3 := r0.uploadSkill(t, sayTar(t, "three"), http.StatusCreated)
	require.NoError(t, r0.cmd.Process.Signal(syscall.SIGKILL))
	<-r0.done
	c, res = r1.runUpload(t, "up-say@"+v3.Digest)
	require.Equal(t, http.StatusOK, c.status, c.String())
	require.Equal(t, "three\n", res.Stdout)
	c = r1.do(t, "DELETE", "/v1/skills/up-say", nil)
	require.Equal(t, http.StatusNoContent, c.status, c.String())

	// Back, r-0 sees the delete; the killed process's staging folder is
	// gone (its lock went with it), the live ones' are kept.
	rs.start(t, 0)
	require.Empty(t, rs.srv[0].uploadedVersions(t))
	rs.srv[0].uploadSkill(t, sayTar(t, "four"), http.StatusCreated)
	procs, err := os.ReadDir(filepath.Join(store, ".staging"))
	require.NoError(t, err)
	require.Len(t, procs, 2, "one staging folder per live replica: %v", procs)
	eventuallyNoSkillContainers(t, "up-say")
}

// TestSessionsListedOnEveryReplica: a token's sessions are listed through
// either replica; a replica that is down is named, never left out silently.
func TestSessionsListedOnEveryReplica(t *testing.T) {
	t.Parallel()
	rs := startReplicas(t)
	r0, r1 := rs.srv[0], rs.srv[1]
	a := r0.create(t, "")
	b := r1.create(t, "")
	type list struct {
		Sessions    []sessionInfo `json:"sessions"`
		Partial     bool          `json:"partial"`
		Unreachable []string      `json:"unreachable"`
	}
	listOf := func(s *sessServer, token string) list {
		c := s.doAs(t, token, "GET", "/v1/sessions", nil)
		require.Equal(t, http.StatusOK, c.status, c.String())
		var l list
		require.NoError(t, json.Unmarshal(c.body, &l))
		return l
	}
	for _, s := range rs.srv {
		l := listOf(s, replicaTokenA)
		require.False(t, l.Partial)
		require.Empty(t, l.Unreachable)
		require.Len(t, l.Sessions, 2)
		require.Equal(t, []string{a.ID, b.ID}, []string{l.Sessions[0].ID, l.Sessions[1].ID})
		require.Empty(t, listOf(s, replicaTokenB).Sessions, "another token's sessions are never listed")
	}
	require.NoError(t, r0.cmd.Process.Signal(syscall.SIGKILL))
	<-r0.done
	l := listOf(r1, replicaTokenA)
	require.True(t, l.Partial)
	require.Equal(t, []string{"r-0"}, l.Unreachable)
	require.Len(t, l.Sessions, 1)
	require.Equal(t, b.ID, l.Sessions[0].ID)
}
