//go:build helm

package helm

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stretchr/testify/require"
)

// uploadsValues turn uploads on with the claim prepareUploads binds.
var uploadsValues = []string{"--set", "uploads.enabled=true", "--set", "uploads.storageClass=sandboxrun-test-uploads",
	"--set", "uploads.size=1Gi", "--set", "uploads.retainOnUninstall=false"}

// prepareUploads makes the volume the chart's uploads claim binds: one
// hostPath folder with accessModes ReadWriteMany, which both replicas on
// the one node mount, a stand-in for NFS or CephFS.
func (c *cluster) prepareUploads() {
	t := c.t
	d := filepath.Join(c.run, "helm-test", "uploads")
	require.NoError(t, os.MkdirAll(d, 0o755))
	require.NoError(t, os.Chown(d, 65532, 65532))
	c.apply(fmt.Sprintf(`
apiVersion: v1
kind: PersistentVolume
metadata: {name: sbx-helm-uploads}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: sandboxrun-test-uploads
  claimRef: {namespace: %[1]s, name: %[2]s-uploads}
  hostPath: {path: %[3]s, type: Directory}
`, namespace, fullname, d))
}

// uploadedSkill is a tar of a skill whose script prints word.
func uploadedSkill(t require.TestingT, word string) string {
	files := map[string]string{
		"SKILL.md":       "---\nname: up-hello\ndescription: Says a word. Use it to test uploads across replicas.\n---\nRun scripts/say.py.\n",
		"scripts/say.py": "print(" + fmt.Sprintf("%q", word) + ")\n",
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range []string{"SKILL.md", "scripts/say.py"} {
		body := files[name]
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.String()
}

// uploadsAcrossReplicas: an upload made through replica 0 (at urls[0]) is
// listed and runs (in a sandbox Pod, from the shared claim) through
// replica 1 (urls[1]), is deleted through replica 1, and is gone through
// replica 0.
func uploadsAcrossReplicas(api *client, urls [2]string) {
	t := api.t
	var up struct {
		Name, Version, Digest string
	}
	api.json(api.doMedia("POST", urls[0]+"/v1/skills", "application/x-tar", uploadedSkill(t, "shared"), 201), &up)
	answered := time.Now()
	require.Equal(t, "up-hello", up.Name)

	var list struct {
		Skills []struct {
			Name, Source, Digest string
		} `json:"skills"`
	}
	api.json(api.do("GET", urls[1]+"/v1/skills", "", 200), &list)
	found := false
	for _, s := range list.Skills {
		if s.Name == "up-hello" {
			found = true
			require.Equal(t, "uploaded", s.Source)
			require.Equal(t, up.Digest, s.Digest)
		}
	}
	require.True(t, found, "replica 1 lists the upload replica 0 took, at the first ask: %+v", list.Skills)
	t.Logf("upload 201 on replica 0 to its listing on replica 1: %s (the first list asked)", time.Since(answered).Round(time.Microsecond))

	var res struct {
		ExitCode    int    `json:"exit_code"`
		Stdout      string `json:"stdout"`
		Error       string `json:"error"`
		SkillDigest string `json:"skill_digest"`
	}
	ran := time.Now()
	api.json(api.do("POST", urls[1]+"/v1/skills/up-hello@"+up.Digest+"/run", `{"script": "scripts/say.py"}`, 200), &res)
	t.Logf("first run of the upload through replica 1, in a sandbox Pod: %s", time.Since(ran).Round(time.Millisecond))
	require.Equal(t, 0, res.ExitCode, res.Error)
	require.Equal(t, "shared\n", res.Stdout)
	require.Equal(t, up.Digest, res.SkillDigest)

	api.do("DELETE", urls[1]+"/v1/skills/up-hello", "", 204)
	api.do("GET", urls[0]+"/v1/skills/up-hello/versions", "", 404)
	body := api.do("POST", urls[0]+"/v1/skills/up-hello/run", `{"script": "scripts/say.py"}`, 404)
	require.True(t, strings.Contains(string(body), "up-hello"), string(body))
}
