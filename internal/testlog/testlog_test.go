package testlog

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Loggers on many goroutines write while the test reads: every line
// arrives whole (the race detector checks the rest).
func TestBufferTakesConcurrentWrites(t *testing.T) {
	var b Buffer
	log := slog.New(slog.NewTextHandler(&b, nil))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				log.Info("hello", "writer", i, "n", j)
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 8*50)
	for _, l := range lines {
		require.Regexp(t, `^time=\S+ level=INFO msg=hello writer=\d n=\d+$`, l)
	}
}

func TestBufferMax(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"zero keeps everything", 0, []string{"abc", "def", "ghi"}, "abcdefghi"},
		{"under the bound keeps everything", 9, []string{"abc", "def", "ghi"}, "abcdefghi"},
		{"past the bound keeps the tail", 5, []string{"abc", "def", "ghi"}, "efghi"},
		{"one write longer than the bound keeps its tail", 4, []string{"ab", "cdefgh"}, "efgh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Buffer{Max: tt.max}
			for _, w := range tt.writes {
				n, err := fmt.Fprint(b, w)
				require.NoError(t, err)
				require.Equal(t, len(w), n, "a write reports all its bytes taken")
			}
			require.Equal(t, tt.want, b.String())
		})
	}
}
