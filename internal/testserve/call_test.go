package testserve

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/cut":
			// Promise more than is sent, then hang up: the body is cut short.
			w.Header().Set("Content-Length", "100")
			_, _ = w.Write([]byte("partial"))
			rc := http.NewResponseController(w)
			_ = rc.Flush() // the status and a part of the body are out
			conn, _, err := rc.Hijack()
			if err == nil {
				_ = conn.Close()
			}
		default:
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(r.Method + " " + string(b)))
		}
	}))
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name       string
		ctx        context.Context
		method     string
		url        string
		wantStatus int
		wantBody   string
	}{
		{"answered", context.Background(), "PUT", srv.URL + "/f", http.StatusCreated, "PUT hello"},
		{"refused", context.Background(), "PUT", refused + "/f", -1, ""},
		{"cancelled", cancelled, "PUT", srv.URL + "/f", -1, ""},
		{"answer cut short", context.Background(), "PUT", srv.URL + "/cut", -1, ""},
		{"bad method", context.Background(), "BAD METHOD", srv.URL + "/f", -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := Call(tt.ctx, tt.method, tt.url, []byte("hello"))
			require.Equal(t, tt.wantStatus, status)
			require.Equal(t, tt.wantBody, string(body))
		})
	}
}
