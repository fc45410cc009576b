package server_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/server"
)

// FuzzSessionFileURL sends file calls whose URL path is anything a client
// can put on the request line, as the server's own parser reads it, and
// checks that the guard in front of the router and the store agree: a path
// is either refused, or lands exactly at its decoded, checked form inside
// the session's folder; nothing outside that folder ever changes.
func FuzzSessionFileURL(f *testing.F) {
	for _, s := range []string{"a", "a/b.txt", "..", "../x", "a/../b", "%2e%2e/x", "a%2fb", "a%5cb", `a\b`,
		"%00", "a%00b", "/etc/passwd", "//x", "a//b", "./a", "a/.", "%252e%252e", "é/ü.txt", "%C3%A9",
		"a?b=c", "a#b", "a;b", ".sandboxrun-upload-x", "a/b/", "%2E%2E%2F%2E%2E%2Fx", "..%2f", "x/%2e"} {
		f.Add(s)
	}
	base := f.TempDir()
	roots := filepath.Join(base, "sessions")
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "x"), 0o755); err != nil {
		f.Fatal(err)
	}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: &recorder{&specEngine{}}, SessionsRoot: roots})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA)})
	if err != nil {
		f.Fatal(err)
	}
	// The session is made as a client makes it, so the server decides
	// who owns it.
	req := httptest.NewRequest("POST", "/v1/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	var info struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &info); rec.Code != http.StatusCreated || err != nil {
		f.Fatalf("create a session: %d %s", rec.Code, rec.Body)
	}
	ws := filepath.Join(roots, "ws", info.ID)
	outsideBefore := digestTree(f, base, ws)
	prefix := "/v1/sessions/" + info.ID + "/files/"

	f.Fuzz(func(t *testing.T, p string) {
		raw := fmt.Sprintf("PUT %s%s HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer %s\r\nContent-Length: 1\r\n\r\nx", prefix, p, tokenA)
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return // the server's parser refuses it before any handler
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code == http.StatusCreated {
			stored, ok := strings.CutPrefix(req.URL.Path, prefix)
			if !ok {
				t.Fatalf("%q stored although its path %q is not under the session's files", p, req.URL.Path)
			}
			if err := svc.CheckFilePath(stored); err != nil {
				t.Fatalf("%q stored as %q, which the path guard refuses: %v", p, stored, err)
			}
			b, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(stored)))
			if err != nil || string(b) != "x" {
				t.Fatalf("%q answered 201 but %q is not in the session's folder: %v", p, stored, err)
			}
			del := httptest.NewRequest("DELETE", "/", nil)
			del.URL.Path = prefix + stored
			del.Header.Set("Authorization", "Bearer "+tokenA)
			drec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(drec, del)
			if drec.Code != http.StatusNoContent {
				t.Fatalf("delete %q: %d %s", stored, drec.Code, drec.Body)
			}
		}
		if got := digestTree(t, base, ws); got != outsideBefore {
			t.Fatalf("%q (status %d) changed something outside the session's folder", p, rec.Code)
		}
	})
}

// digestTree sums the names and contents under dir, skipping skip (the
// session's folder) and the store's metadata, which uses touch.
func digestTree(tb testing.TB, dir, skip string) string {
	tb.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip || d.Name() == "meta" {
			return filepath.SkipDir
		}
		fmt.Fprintf(h, "%s\x00%v\x00", p, d.Type())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
