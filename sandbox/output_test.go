package sandbox

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestCapture(t *testing.T) {
	tests := []struct {
		name      string
		limit     int64
		writes    []string
		want      string
		total     int64
		truncated bool
	}{
		{"under", 10, []string{"abc", "de"}, "abcde", 5, false},
		{"exact", 5, []string{"abcde"}, "abcde", 5, false},
		{"over in one write", 3, []string{"abcde"}, "abc", 5, true},
		{"over across writes", 4, []string{"abc", "def", "g"}, "abcd", 7, true},
		{"empty write at cap", 3, []string{"abc", ""}, "abc", 3, false},
		{"cut rune dropped", 4, []string{"abc\u00e9z"}, "abc", 6, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCapture(tt.limit)
			for _, w := range tt.writes {
				n, err := c.Write([]byte(w))
				require.NoError(t, err)
				require.Equal(t, len(w), n, "capture never reports a short write")
			}
			require.Equal(t, tt.want, c.text())
			require.Equal(t, tt.total, c.total)
			require.Equal(t, tt.truncated, c.truncated)
		})
	}
}

func TestSanitizeUTF8(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"valid", []byte("héllo ✓"), "héllo ✓"},
		{"one bad byte", []byte{'a', 0xff, 'b'}, "a\ufffdb"},
		{"each bad byte replaced", []byte{0xff, 0xfe, 0xfd}, "\ufffd\ufffd\ufffd"},
		{"truncated sequence", []byte{'x', 0xe2, 0x9c}, "x\ufffd\ufffd"},
		{"latin1", []byte("caf\xe9"), "caf\ufffd"},
		{"nul kept", []byte("a\x00b"), "a\x00b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sanitizeUTF8(tt.in)
			require.True(t, utf8.ValidString(got))
			require.Equal(t, tt.want, got)
		})
	}
}

func TestTrimPartialRune(t *testing.T) {
	check := "\u2713" // 3 bytes
	require.Equal(t, "ab", string(trimPartialRune([]byte("ab"+check[:2]))))
	require.Equal(t, "ab"+check, string(trimPartialRune([]byte("ab"+check))))
	require.Equal(t, "ab", string(trimPartialRune([]byte("ab"))))
	require.Equal(t, "", string(trimPartialRune([]byte(check[:1]))))
}

func TestJSONOutput(t *testing.T) {
	tests := []struct {
		name      string
		stdout    string
		truncated bool
		want      string // "" for nil
	}{
		{"object", `{"a": 1}`, false, `{"a": 1}`},
		{"with newline", "[1,2]\n", false, `[1,2]`},
		{"number", "42", false, "42"},
		{"text", "hello", false, ""},
		{"two values", "1 2", false, ""},
		{"empty", "  \n", false, ""},
		{"truncated json", `{"a": 1}`, true, ""},
		{"replacement char inside", "\"a\ufffd\"", false, "\"a\ufffd\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := jsonOutput(tt.stdout, tt.truncated)
			if tt.want == "" {
				require.Nil(t, got)
				b, err := json.Marshal(struct {
					O json.RawMessage `json:"output"`
				}{got})
				require.NoError(t, err)
				require.JSONEq(t, `{"output": null}`, string(b))
				return
			}
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestHeadTail(t *testing.T) {
	h := &headTail{max: 4}
	_, _ = h.Write([]byte("ab"))
	require.Equal(t, "ab", h.String())
	_, _ = h.Write([]byte("cdef"))
	require.Equal(t, "abcdef", h.String(), "head then tail, nothing dropped yet")
	_, _ = h.Write([]byte("ghij"))
	require.Equal(t, "abcd\n[... 2 bytes ...]\nghij", h.String())
	_, _ = h.Write([]byte(strings.Repeat("x", 10)))
	require.Equal(t, "abcd\n[... 12 bytes ...]\nxxxx", h.String())

	crash := &headTail{max: 4096}
	_, _ = crash.Write([]byte("runtime: failed to create new OS thread (have 7 already; errno=11)\nfatal error: newosproc\n"))
	require.Equal(t, "runtime: failed to create new OS thread (have 7 already; errno=11)", crash.firstLine())
}

func TestLiveWriterStopsAfterError(t *testing.T) {
	fw := &failingWriter{}
	lw := &liveWriter{w: fw}
	for range 3 {
		n, err := lw.Write([]byte("x"))
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	require.Equal(t, 1, fw.calls, "a failed writer is not called again")
}

var errTest = errors.New("test failure")

type failingWriter struct{ calls int }

func (f *failingWriter) Write([]byte) (int, error) {
	f.calls++
	return 0, errTest
}
