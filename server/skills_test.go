package server_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/server"
)

// dirEngine is engine that remembers each run's skill folder.
type dirEngine struct {
	engine
	mu   sync.Mutex
	dirs []string
}

func (d *dirEngine) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	d.mu.Lock()
	d.dirs = append(d.dirs, spec.SkillDir)
	d.mu.Unlock()
	return d.engine.Run(ctx, spec)
}

func (d *dirEngine) last() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dirs[len(d.dirs)-1]
}

func startUploads(t *testing.T, yaml string) (string, *dirEngine) {
	t.Helper()
	store := t.TempDir()
	pol, err := policy.ParsePolicy("p.yaml", []byte(strings.ReplaceAll(yaml, "STORE", store)))
	require.NoError(t, err)
	eng := &dirEngine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: eng, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA, tokenB)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL, eng
}

const uploadsOn = "skill_uploads:\n  allow: tokens\n  store: STORE\n"

func greeter(name, script string) map[string]string {
	return map[string]string{
		"SKILL.md":         "---\nname: " + name + "\ndescription: Greets. Use it to say hello.\n---\nRun scripts/hi.py.\n",
		"scripts/hi.py":    script,
		"references/a.txt": "notes",
	}
}

func skillTar(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.String()
}

func skillZip(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = w.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.String()
}

type uploaded struct {
	Name, Version, Digest string
	Warnings              []string
}

func upload(t *testing.T, url, tok, media, body string, want int) uploaded {
	t.Helper()
	r := call(t, "POST", url+"/v1/skills", body, append(as(tok), "Content-Type", media)...)
	require.Equal(t, want, r.status, string(r.body))
	var u uploaded
	switch want {
	case http.StatusCreated, http.StatusOK:
		requireSchema(t, "SkillUpload", r.body)
		require.NoError(t, json.Unmarshal(r.body, &u))
	case http.StatusUnprocessableEntity:
		requireSchema(t, "SkillInvalid", r.body)
	default:
		requireSchema(t, "Error", r.body)
	}
	return u
}

func TestSkillUploadsOffByDefault(t *testing.T) {
	url, _ := startUploads(t, "network: none\n")
	r := call(t, "POST", url+"/v1/skills", skillTar(t, greeter("hi", "print(1)")), append(as(tokenA), "Content-Type", "application/x-tar")...)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Contains(t, string(r.body), "skill_uploads")
	r = call(t, "GET", url+"/v1/skills/hi/versions", "", as(tokenA)...)
	require.Equal(t, http.StatusForbidden, r.status)
}

func TestSkillUploadPinAndRun(t *testing.T) {
	url, eng := startUploads(t, uploadsOn)
	v1 := upload(t, url, tokenA, "application/x-tar", skillTar(t, greeter("hi", "print(1)\n")), http.StatusCreated)
	require.Equal(t, "1", v1.Version)
	again := upload(t, url, tokenA, "application/zip", skillZip(t, greeter("hi", "print(1)\n")), http.StatusOK)
	require.Equal(t, v1.Digest, again.Digest, "the same content as a zip is the same version")
	v2 := upload(t, url, tokenA, "application/zip", skillZip(t, greeter("hi", "print(2)\n")), http.StatusCreated)
	require.Equal(t, "2", v2.Version)

	// Bare name: the newest; both pins: the version named.
	for ref, want := range map[string]uploaded{"hi": v2, "hi@1": v1, "hi@" + v1.Digest: v1, "hi@2": v2} {
		r := call(t, "POST", url+"/v1/skills/"+ref+"/run", `{"script": "scripts/hi.py"}`, as(tokenA)...)
		require.Equal(t, http.StatusOK, r.status, ref+": "+string(r.body))
		requireSchema(t, "Result", r.body)
		var res sandbox.Result
		require.NoError(t, json.Unmarshal(r.body, &res))
		require.Equal(t, want.Digest, res.SkillDigest, ref)
		b, err := os.ReadFile(filepath.Join(eng.last(), "scripts/hi.py"))
		require.NoError(t, err)
		require.Equal(t, "print("+want.Version+")\n", string(b), ref)
		require.Equal(t, "hi", filepath.Base(eng.last()), "mounted at /skills/hi")
	}

	// An operator skill's Result carries its digest too.
	r := call(t, "POST", url+"/v1/skills/hello/run", `{"script": "scripts/echo.py"}`, as(tokenA)...)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var res sandbox.Result
	require.NoError(t, json.Unmarshal(r.body, &res))
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, res.SkillDigest)

	// Listing: the operator's skills and the caller's own.
	r = call(t, "GET", url+"/v1/skills", "", as(tokenA)...)
	requireSchema(t, "SkillList", r.body)
	var list struct {
		Skills []struct {
			Name, Source, Digest string
			Versions             []json.RawMessage
		}
	}
	require.NoError(t, json.Unmarshal(r.body, &list))
	sources := map[string]string{}
	for _, s := range list.Skills {
		sources[s.Name] = s.Source
		if s.Name == "hi" {
			require.Equal(t, v2.Digest, s.Digest)
			require.Len(t, s.Versions, 2)
		}
	}
	require.Equal(t, "uploaded", sources["hi"])
	require.Equal(t, "operator", sources["hello"])

	r = call(t, "GET", url+"/v1/skills/hi/versions", "", as(tokenA)...)
	require.Equal(t, http.StatusOK, r.status)
	requireSchema(t, "SkillVersions", r.body)

	// Another token sees, runs and deletes none of it.
	r = call(t, "POST", url+"/v1/skills/hi/run", `{"script": "scripts/hi.py"}`, as(tokenB)...)
	require.Equal(t, http.StatusNotFound, r.status, string(r.body))
	r = call(t, "GET", url+"/v1/skills/hi/versions", "", as(tokenB)...)
	require.Equal(t, http.StatusNotFound, r.status)
	r = call(t, "DELETE", url+"/v1/skills/hi", "", as(tokenB)...)
	require.Equal(t, http.StatusNotFound, r.status)
	r = call(t, "GET", url+"/v1/skills", "", as(tokenB)...)
	require.NotContains(t, string(r.body), `"hi"`)

	// Delete a version, then the skill.
	r = call(t, "DELETE", url+"/v1/skills/hi/versions/1", "", as(tokenA)...)
	require.Equal(t, http.StatusNoContent, r.status, string(r.body))
	r = call(t, "POST", url+"/v1/skills/hi@1/run", `{"script": "scripts/hi.py"}`, as(tokenA)...)
	require.Equal(t, http.StatusNotFound, r.status, string(r.body))
	r = call(t, "DELETE", url+"/v1/skills/hi", "", as(tokenA)...)
	require.Equal(t, http.StatusNoContent, r.status)
	r = call(t, "POST", url+"/v1/skills/hi/run", `{"script": "scripts/hi.py"}`, as(tokenA)...)
	require.Equal(t, http.StatusNotFound, r.status)
}

func TestSkillUploadRefusals(t *testing.T) {
	url, _ := startUploads(t, uploadsOn+"  max_upload_bytes: 8Ki\n")
	upload(t, url, tokenA, "application/x-tar", skillTar(t, greeter("hello", "print(1)")), http.StatusConflict)
	upload(t, url, tokenA, "application/x-tar", skillTar(t, map[string]string{"SKILL.md": "---\nname: x\n---\n"}), http.StatusUnprocessableEntity)
	upload(t, url, tokenA, "application/x-tar", skillTar(t, map[string]string{"../SKILL.md": "x"}), http.StatusBadRequest)
	upload(t, url, tokenA, "application/x-tar", skillTar(t, map[string]string{"big": strings.Repeat("x", 10000)}), http.StatusRequestEntityTooLarge)
	upload(t, url, tokenA, "text/plain", "x", http.StatusUnsupportedMediaType)
	upload(t, url, tokenA, "application/zip", "not a zip", http.StatusBadRequest)
	r := call(t, "POST", url+"/v1/skills/hi@sha256:zz/run", `{"script": "scripts/hi.py"}`, as(tokenA)...)
	require.Equal(t, http.StatusNotFound, r.status, string(r.body))
}

// Grants never travel by name: an upload named like a skill the policy
// grants (network, tools) gets none of it.
func TestUploadedSkillGetsNoGrantsByName(t *testing.T) {
	url, _ := startUploads(t, uploadsOn+"network: none\nskills:\n  billing:\n    network: declared\n    allowed-tools: Bash(curl:*)\n")
	files := greeter("billing", "print(1)")
	files["SKILL.md"] = "---\nname: billing\ndescription: Bills. Use it to bill.\nmetadata:\n  network_access: \"true\"\n---\nRun scripts/hi.py.\n"
	upload(t, url, tokenA, "application/x-tar", skillTar(t, files), http.StatusCreated)

	r := call(t, "POST", url+"/v1/skills/billing/run", `{"script": "scripts/hi.py"}`, as(tokenA)...)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var res sandbox.Result
	require.NoError(t, json.Unmarshal(r.body, &res))
	require.False(t, res.Limits.Network, "the policy's network: none, not skills.billing's grant")

	r = call(t, "POST", url+"/v1/skills/billing/exec", `{"command": "curl -s example.com"}`, as(tokenA)...)
	require.Equal(t, http.StatusForbidden, r.status, "skills.billing's allowed-tools are not the upload's: %s", r.body)
	r = call(t, "GET", url+"/v1/skills/billing", "", as(tokenA)...)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.NotContains(t, string(r.body), "curl")
}
