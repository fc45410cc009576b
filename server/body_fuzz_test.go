package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/server"
)

// FuzzRunBody sends any body to the run, exec, python and explain
// endpoints through the real router and decoder, over a fake engine: the
// answer is never a 5xx, and a body that is not UTF-8 never reaches the
// engine.
func FuzzRunBody(f *testing.F) {
	for _, s := range []string{`{"code": "print(1)"}`, `{"script": "scripts/echo.py", "args": {"a": [1, 2]}}`,
		`{"command": "echo hi"}`, `{"Code": "1"}`, `{"code": "\ud800"}`, "{\"code\": \"\xff\"}", `{"code": "1"} 2`,
		`{"code": "1", "timeout": 1e400}`, `{"code": "1", "env": {"A": "b"}, "argv": ["x"]}`, `[[[[`, ``} {
		f.Add(s, uint8(0))
	}
	eng := &engine{}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: eng})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	endpoints := []string{"run", "exec", "python", "explain"}
	f.Fuzz(func(t *testing.T, body string, which uint8) {
		eng.mu.Lock()
		before := eng.runs
		eng.mu.Unlock()
		req := httptest.NewRequest("POST", "/v1/skills/hello/"+endpoints[int(which)%len(endpoints)], strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q: %d %s", body, rec.Code, rec.Body)
		}
		eng.mu.Lock()
		ran := eng.runs > before
		eng.mu.Unlock()
		if ran && !utf8.ValidString(body) {
			t.Fatalf("a body that is not UTF-8 reached the engine: %q", body)
		}
		if rec.Code == http.StatusOK && !utf8.ValidString(body) {
			t.Fatalf("a body that is not UTF-8 was accepted: %q", body)
		}
	})
}
