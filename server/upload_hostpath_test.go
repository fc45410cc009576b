package server_test

import (
	"archive/tar"
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/server"
)

// linkTar is a tar of files and, for a body starting with "->", links to
// what follows.
func linkTar(t *testing.T, files map[string]string) string {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		body := files[name]
		if target, ok := strings.CutPrefix(body, "->"); ok {
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Linkname: target, Mode: 0o777, Typeflag: tar.TypeSymlink}))
			continue
		}
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.String()
}

// A refused upload names the skill's files by their paths in the archive:
// its answer holds none of the server's folders, neither the staging
// folder the upload was checked in, nor the store, nor the skills root, nor
// the policy file, whoever uploads it.
func TestUploadRefusalsNameNoHostPath(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "uploads")
	polPath := filepath.Join(dir, "operator-policy.yaml")
	require.NoError(t, os.WriteFile(polPath, []byte("skill_uploads:\n  allow: tokens\n  store: "+store+"\n"), 0o600))
	pol, err := policy.LoadPolicy(polPath)
	require.NoError(t, err)
	sessions := filepath.Join(dir, "sessions")
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: &recorder{&specEngine{}},
		SessionsRoot: sessions, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA, tokenB)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	skills, err := filepath.Abs("../skills")
	require.NoError(t, err)
	host := []string{dir, store, filepath.Join(store, ".staging"), skills, sessions, polPath}

	skillWith := func(extra map[string]string) map[string]string {
		files := map[string]string{"SKILL.md": "---\nname: up\ndescription: A skill for the test. Use it in tests.\n---\nRun the scripts.\n"}
		for k, v := range extra {
			files[k] = v
		}
		return files
	}
	tests := []struct {
		name  string
		files map[string]string
		told  string // in the answer
	}{
		{"a script holding only x", skillWith(map[string]string{"scripts/a": "x"}), "up/scripts/a: no interpreter"},
		{"a bare shebang", skillWith(map[string]string{"scripts/a": "#!"}), "up/scripts/a: no interpreter"},
		{"an empty script", skillWith(map[string]string{"scripts/a": ""}), "up/scripts/a: no interpreter"},
		{"a shebang with quotes", skillWith(map[string]string{"scripts/a": "#!/bin/sh \"-e\"\n"}), "up/scripts/a: no interpreter"},
		{"a shebang with an env option", skillWith(map[string]string{"scripts/a": "#!/usr/bin/env -i python3\n"}), "up/scripts/a: no interpreter"},
		{"a script linked out of scripts", skillWith(map[string]string{"scripts/a.py": "->../lib/a.py", "lib/a.py": "print(1)\n"}), "it resolves to up/lib/a.py"},
		{"scripts is a link", skillWith(map[string]string{"scripts": "->lib", "lib/a.py": "print(1)\n"}), "up/scripts: outside the skill's scripts/ folder"},
		{"the body names a missing script", map[string]string{"SKILL.md": "---\nname: up\ndescription: A skill for the test. Use it in tests.\n---\nRun scripts/gone.py.\n", "scripts/a.py": "print(1)\n"}, "scripts/gone.py"},
		{"the body names a script linked out of scripts", map[string]string{"SKILL.md": "---\nname: up\ndescription: A skill for the test. Use it in tests.\n---\nRun scripts/tool.py.\n", "scripts/tool.py": "->../lib/t.py", "lib/t.py": "print(1)\n"}, "the body references `scripts/tool.py`, which sandboxrun will not run: script \\\"scripts/tool.py\\\": outside the skill's scripts/ folder: it resolves to up/lib/t.py"},
		{"an invalid SKILL.md", map[string]string{"SKILL.md": "---\nname: [up\n---\n"}, "SKILL.md:2"},
	}
	for _, tt := range tests {
		for _, tok := range []string{tokenA, tokenB} {
			t.Run(tt.name+" "+tok[:7], func(t *testing.T) {
				r := call(t, "POST", ts.URL+"/v1/skills", linkTar(t, tt.files), append(as(tok), "Content-Type", "application/x-tar")...)
				require.Equal(t, http.StatusUnprocessableEntity, r.status, string(r.body))
				requireSchema(t, "SkillInvalid", r.body)
				requireNoHostPath(t, r.body, host)
				require.NotContains(t, string(r.body), "a file of the server", "every file the answer names is the upload's")
				require.Contains(t, string(r.body), tt.told)
			})
		}
	}
}
