package egress

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// clientHello is what a real TLS client sends first for serverName.
func clientHello(t *testing.T, serverName string) []byte {
	t.Helper()
	a, b := net.Pipe()
	go func() {
		c := tls.Client(a, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}) //nolint:gosec // only the ClientHello is wanted
		_ = c.Handshake()
	}()
	var buf bytes.Buffer
	hdr := make([]byte, 5)
	_, err := io.ReadFull(b, hdr)
	require.NoError(t, err)
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	_, err = io.ReadFull(b, body)
	require.NoError(t, err)
	buf.Write(hdr)
	buf.Write(body)
	a.Close()
	b.Close()
	return buf.Bytes()
}

func TestReadClientHello(t *testing.T) {
	for _, name := range []string{"example.com", "Api.Example.COM", ""} {
		t.Run("sni "+name, func(t *testing.T) {
			hello := clientHello(t, name)
			// Bytes after the hello (pipelined by an eager client) must
			// be kept too: everything read is forwarded.
			in := append(bytes.Clone(hello), "tail"...)
			sni, raw, err := readClientHello(bytes.NewReader(in))
			require.NoError(t, err)
			require.Equal(t, name, sni)
			require.True(t, bytes.HasPrefix(in, raw), "raw is a prefix of the input")
			require.GreaterOrEqual(t, len(raw), len(hello))
		})
	}
	t.Run("byte by byte", func(t *testing.T) {
		hello := clientHello(t, "slow.example.com")
		sni, raw, err := readClientHello(&oneByteReader{r: bytes.NewReader(hello)})
		require.NoError(t, err)
		require.Equal(t, "slow.example.com", sni)
		require.Equal(t, hello, raw)
	})
	for _, in := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "SSH-2.0-OpenSSH_9.2\r\n", "", "\x16\x03\x01\x00"} {
		t.Run("not tls "+in, func(t *testing.T) {
			_, _, err := readClientHello(bytes.NewReader([]byte(in)))
			require.ErrorIs(t, err, ErrDenied)
			require.ErrorContains(t, err, "did not start with a TLS ClientHello")
		})
	}
	t.Run("endless garbage is bounded", func(t *testing.T) {
		_, raw, err := readClientHello(io.MultiReader(bytes.NewReader([]byte{22, 3, 1, 0xff, 0xff}), zeros{}))
		require.ErrorIs(t, err, ErrDenied)
		require.LessOrEqual(t, len(raw), maxHelloBytes)
	})
}

type oneByteReader struct{ r io.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(1, len(p))]) }

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestCheckSNI(t *testing.T) {
	host := func(s string) egressrule.Host {
		h, err := egressrule.ParseHost(s)
		require.NoError(t, err)
		return h
	}
	tests := []struct {
		host, sni string
		ok        bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "EXAMPLE.com", true},
		{"example.com", "example.com.", true},
		{"example.com", "", false},
		{"example.com", "evil.com", false},
		{"example.com", "a.example.com", false},
		{"example.com", "example.com.evil.com", false},
		{"example.com", "127.0.0.1", false},
		{"example.com", "exa mple.com", false},
		{"127.0.0.1", "", true},
		{"127.0.0.1", "127.0.0.1", false},
		{"127.0.0.1", "example.com", false},
		{"::1", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.host+" "+tt.sni, func(t *testing.T) {
			err := checkSNI(host(tt.host), tt.sni)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrDenied)
		})
	}
}
