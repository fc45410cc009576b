package egress

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProxyLimits(t *testing.T) {
	big := strings.Repeat("x", 256<<10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			io.WriteString(w, big)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	pp := port(t, up.URL)
	res := &fakeResolver{names: map[string][]string{"up.test": {"127.0.0.1"}}}

	t.Run("connections", func(t *testing.T) {
		cfg := testConfig(t, "up.test:"+pp)
		cfg.MaxConnections = 2
		p := startProxy(t, cfg, WithResolver(res))
		c := through(p, nil)
		for range 2 {
			status, _ := get(t, c, "http://up.test:"+pp+"/")
			require.Equal(t, http.StatusOK, status)
		}
		status, body := get(t, c, "http://up.test:"+pp+"/")
		require.Equal(t, http.StatusTooManyRequests, status)
		require.Contains(t, body, "connections limit (2) is reached; the operator's egress.max_connections sets it")
		require.Equal(t, []string{"connections"}, p.Record().LimitsHit)
	})
	t.Run("bytes", func(t *testing.T) {
		cfg := testConfig(t, "up.test:"+pp)
		cfg.MaxBytes = 64 << 10
		p := startProxy(t, cfg, WithResolver(res))
		c := through(p, nil)
		resp, err := c.Get("http://up.test:" + pp + "/big")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Less(t, len(b), len(big), "the response was cut at the byte limit")
		}
		rec := p.Record()
		require.Equal(t, []string{"bytes"}, rec.LimitsHit)
		require.Less(t, rec.BytesDown, int64(len(big)))
		status, body := get(t, c, "http://up.test:"+pp+"/")
		require.NotEqual(t, http.StatusOK, status, "nothing more once the budget is spent: %s", body)
	})
	t.Run("idle tunnel", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close() // silent: reads the hello, never answers
				go io.Copy(io.Discard, c)
			}
		}()
		_, sp, _ := net.SplitHostPort(ln.Addr().String())
		cfg := testConfig(t, "quiet.test:"+sp)
		cfg.IdleTimeout = 300 * time.Millisecond
		p := startProxy(t, cfg, WithResolver(&fakeResolver{names: map[string][]string{"quiet.test": {"127.0.0.1"}}}))
		conn := connect(t, p, "quiet.test:"+sp)
		defer conn.Close()
		err = tls.Client(conn, &tls.Config{ServerName: "quiet.test"}).Handshake()
		require.Error(t, err, "the proxy closed the quiet tunnel")
		require.NoError(t, p.Close())
		d := p.Record().Decisions[0]
		require.True(t, d.Allowed)
		require.Contains(t, d.Reason, "without traffic (egress.idle_timeout)")
		require.Positive(t, d.BytesUp, "the ClientHello went through")
	})
}

func TestProxyCloseLeavesNothing(t *testing.T) {
	secure := quietTLSServer(http.HandlerFunc(hello))
	defer secure.Close()
	sp := port(t, secure.URL)
	p := startProxy(t, testConfig(t, "example.com:"+sp), WithResolver(&fakeResolver{names: map[string][]string{"example.com": {"127.0.0.1"}}}))
	fi, err := os.Stat(p.Socket())
	require.NoError(t, err)
	require.Equal(t, os.ModeSocket|0o600, fi.Mode()&(os.ModeSocket|os.ModePerm), "only the owner may connect")
	dfi, err := os.Stat(p.Dir())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), dfi.Mode().Perm())

	conn := connect(t, p, "example.com:"+sp) // an open tunnel is cut by Close
	defer conn.Close()
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close is idempotent")
	_, err = os.Stat(p.Dir())
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = net.Dial("unix", p.Socket())
	require.Error(t, err)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the tunnel was closed, not left to time out")
}
