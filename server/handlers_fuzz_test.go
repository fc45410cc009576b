package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/server"
)

// FuzzHandlers sends any method, path, body and content negotiation to
// every route of the real router (skills, runs, explain, sessions, their
// files and snapshots), over a fake engine and a real session store: no
// input is answered with a 5xx, and none panics. The seed corpus is in
// testdata/fuzz/FuzzHandlers.
func FuzzHandlers(f *testing.F) {
	f.Add(uint8(1), uint8(0), "v1/skills/hello/run", []byte(`{"script": "scripts/echo.py"}`))
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: &recorder{&specEngine{}},
		SessionsRoot: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA)})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	serve := func(method, target string, body []byte, header http.Header) *httptest.ResponseRecorder {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return nil
		}
		req := &http.Request{Method: method, URL: u, RequestURI: target, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: header, Host: "127.0.0.1", Body: http.NoBody, RemoteAddr: "127.0.0.1:1"}
		if len(body) > 0 {
			req.Body, req.ContentLength = httpBody(body), int64(len(body))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	// A session the inputs may name ("SESSION" in the path) and empty.
	rec := serve("POST", "/v1/sessions", nil, http.Header{"Authorization": {"Bearer " + tokenA}})
	var info struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &info); rec.Code != http.StatusCreated || err != nil {
		f.Fatalf("create a session: %d %s", rec.Code, rec.Body)
	}
	methods := []string{"GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS"}
	kinds := []struct{ contentType, accept string }{
		{"application/json", ""}, {"", ""}, {"application/x-tar", ""}, {"application/octet-stream", ""},
		{"application/json", "application/x-ndjson"}, {"application/json", "text/event-stream"},
		{"text/plain; charset=\xff", "*/*"}, {"application/json; boundary=\"", "application/x-ndjson;q=0"},
	}
	f.Fuzz(func(t *testing.T, method, kind uint8, path string, body []byte) {
		k := kinds[int(kind>>1)%len(kinds)]
		header := http.Header{"Content-Type": {k.contentType}, "Accept": {k.accept}}
		if kind&1 == 0 {
			header.Set("Authorization", "Bearer "+tokenA)
		}
		target := "/" + strings.ReplaceAll(strings.TrimPrefix(path, "/"), "SESSION", info.ID)
		m := methods[int(method)%len(methods)]
		rec := serve(m, target, body, header)
		if rec == nil {
			return // not a request line a client can send
		}
		if rec.Code >= 500 {
			t.Fatalf("%s %q (%s): %d %s", m, target, k.contentType, rec.Code, rec.Body)
		}
	})
}

func httpBody(b []byte) *readCloser { return &readCloser{bytes.NewReader(b)} }

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
