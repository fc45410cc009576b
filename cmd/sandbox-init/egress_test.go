package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// echoSocket is a stand-in for the egress proxy: it echoes every
// connection until the client half-closes, then closes.
func echoSocket(t *testing.T) (string, net.Listener) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return sock, ln
}

func startTestRelay(t *testing.T, sock string) (*egressRelay, string) {
	t.Helper()
	r, err := startEgressRelay(&frame.Egress{Listen: "127.0.0.1:0", Socket: sock}, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(r.close)
	return r, r.ln.Addr().String()
}

func TestEgressRelayCarriesBothWays(t *testing.T) {
	sock, _ := echoSocket(t)
	_, addr := startTestRelay(t, sock)
	for _, size := range []int{1, 100 << 10} {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		data := pattern(size)
		go func() {
			_, _ = c.Write(data)
			_ = c.(*net.TCPConn).CloseWrite()
		}()
		got, err := io.ReadAll(c)
		require.NoError(t, err)
		require.True(t, bytes.Equal(data, got), "%d bytes came back as %d", size, len(got))
		c.Close()
	}
}

func TestEgressRelayWithoutProxyEndsTheConnection(t *testing.T) {
	sock, ln := echoSocket(t)
	_, addr := startTestRelay(t, sock)
	ln.Close() // the proxy died: its socket file is gone
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Write([]byte("CONNECT example.com:443 HTTP/1.1\r\n\r\n"))
	got, err := io.ReadAll(c)
	require.Empty(t, got, "nothing answers")
	if err != nil {
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		require.False(t, ne.Timeout(), "the connection is ended at once, not left hanging")
	}
}

func TestEgressRelayCloseCutsConnections(t *testing.T) {
	sock, _ := echoSocket(t)
	r, addr := startTestRelay(t, sock)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("x"))
	require.NoError(t, err)
	buf := make([]byte, 1)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	r.close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Read(buf)
	require.Error(t, err)
	var ne net.Error
	if errors.As(err, &ne) {
		require.False(t, ne.Timeout(), "cut at once, not left to time out")
	}
	_, err = net.Dial("tcp", addr)
	require.Error(t, err, "no longer listening")
}

func TestEgressRelayRefusesBadJobs(t *testing.T) {
	r, err := startEgressRelay(nil, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Nil(t, r)
	r.close() // a nil relay closes quietly
	for _, listen := range []string{"0.0.0.0:3128", "10.0.0.1:3128", ":3128", "localhost:3128", "127.0.0.1"} {
		_, err := startEgressRelay(&frame.Egress{Listen: listen, Socket: "/run/x.sock"}, nil, slog.New(slog.DiscardHandler))
		require.ErrorIs(t, err, errBadJob, listen)
		require.ErrorContains(t, err, "must be a loopback address and port")
	}
	_, err = startEgressRelay(&frame.Egress{Listen: "127.0.0.1:0"}, nil, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "egress socket is empty")
}
