package main

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// pattern is deterministic, non-repeating at chunk boundaries, and not
// valid UTF-8, so any misplaced or dropped byte shows.
func pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i % 251)
	}
	return p
}

// decodeFrames returns the concatenated payload per frame type and the
// number of frames of each type.
func decodeFrames(t *testing.T, r io.Reader) (map[frame.Type][]byte, map[frame.Type]int) {
	t.Helper()
	data := map[frame.Type][]byte{}
	count := map[frame.Type]int{}
	fr := frame.NewReader(r)
	for {
		typ, p, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return data, count
		}
		require.NoError(t, err)
		data[typ] = append(data[typ], p...)
		count[typ]++
	}
}

// chunkReader returns its data in reads of at most n bytes, like a pipe
// read by a slow consumer.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

func TestStreamRelayCap(t *testing.T) {
	tests := []struct {
		name      string
		size      int
		limit     int64
		readSize  int
		truncated bool
	}{
		{"empty", 0, 10, chunkSize, false},
		{"under cap", 100, 1000, chunkSize, false},
		{"exactly cap", 1000, 1000, 7, false},
		{"cap inside a read", 1000, 999, 100, true},
		{"cap on a read boundary", 1000, 500, 100, true},
		{"cap smaller than the first read", 100000, 10, chunkSize, true},
		{"large drained past cap", 3 << 20, 64 << 10, chunkSize, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sink bytes.Buffer
			r := newStreamRelay(frame.Stderr, tc.limit, newFrameWriter(&sink))
			src := pattern(tc.size)
			require.NoError(t, r.copyFrom(&chunkReader{data: src, n: tc.readSize}))

			require.Equal(t, int64(tc.size), r.total)
			require.Equal(t, tc.truncated, r.truncated)
			require.NoError(t, r.sendErr)
			data, count := decodeFrames(t, &sink)
			want := src[:min(int64(tc.size), tc.limit)]
			require.Equal(t, len(want), len(data[frame.Stderr]))
			require.True(t, bytes.Equal(want, data[frame.Stderr]), "relayed bytes differ")
			require.Zero(t, count[frame.Stdout])
			// No empty frames, and at most one frame per read.
			require.LessOrEqual(t, count[frame.Stderr], (len(want)+tc.readSize-1)/max(tc.readSize, 1))
		})
	}
}

// countingWriter fails every write after the first fail writes succeed.
type countingWriter struct {
	ok     int
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > w.ok {
		return 0, io.ErrClosedPipe
	}
	return len(p), nil
}

func TestStreamRelayKeepsDrainingWhenHostIsGone(t *testing.T) {
	host := &countingWriter{ok: 1}
	r := newStreamRelay(frame.Stdout, 1<<30, newFrameWriter(host))
	src := pattern(10 * chunkSize)
	require.NoError(t, r.copyFrom(&chunkReader{data: src, n: chunkSize}))

	require.Equal(t, int64(len(src)), r.total, "everything must still be read")
	require.ErrorIs(t, r.sendErr, io.ErrClosedPipe)
	require.Equal(t, 2, host.writes, "after the first failure nothing more is tried")
}

func TestStreamRelayReadErrorMarksTruncated(t *testing.T) {
	var sink bytes.Buffer
	r := newStreamRelay(frame.Stdout, 1<<20, newFrameWriter(&sink))
	src := io.MultiReader(bytes.NewReader([]byte("partial")), iotest.ErrReader(io.ErrClosedPipe))
	require.ErrorIs(t, r.copyFrom(src), io.ErrClosedPipe)
	require.True(t, r.truncated)
	require.Equal(t, int64(len("partial")), r.total)
	data, _ := decodeFrames(t, &sink)
	require.Equal(t, "partial", string(data[frame.Stdout]))
}

// writeCounter counts write calls to show each frame goes out in one write.
type writeCounter struct {
	bytes.Buffer
	calls int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.calls++
	return w.Buffer.Write(p)
}

func TestFrameWriterOneWritePerChunk(t *testing.T) {
	var w writeCounter
	fw := newFrameWriter(&w)
	require.NoError(t, fw.write(frame.Stdout, pattern(chunkSize)))
	require.Equal(t, 1, w.calls)
	require.Equal(t, frame.HeaderSize+chunkSize, w.Len())
	require.NoError(t, fw.write(frame.Result, []byte("{}")))
	require.Equal(t, 2, w.calls, "every frame is flushed at once")
}

func TestFrameWriterDoesNotInterleave(t *testing.T) {
	var sink bytes.Buffer
	fw := newFrameWriter(&sink)
	const n = 200
	out, errs := pattern(n*300), bytes.Repeat([]byte("E"), n*300)
	var wg sync.WaitGroup
	for _, s := range []struct {
		typ  frame.Type
		data []byte
	}{{frame.Stdout, out}, {frame.Stderr, errs}} {
		wg.Go(func() {
			for i := range n {
				require.NoError(t, fw.write(s.typ, s.data[i*300:(i+1)*300]))
			}
		})
	}
	wg.Wait()
	data, count := decodeFrames(t, &sink)
	require.Equal(t, n, count[frame.Stdout])
	require.Equal(t, n, count[frame.Stderr])
	require.True(t, bytes.Equal(out, data[frame.Stdout]))
	require.True(t, bytes.Equal(errs, data[frame.Stderr]))
}
