package frame_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

type decoded struct {
	typ     frame.Type
	payload []byte
}

// readAll decodes frames until the stream ends, returning the error that
// ended it (nil for a clean io.EOF).
func readAll(r io.Reader) ([]decoded, error) {
	fr := frame.NewReader(r)
	var out []decoded
	for {
		t, p, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, decoded{t, p})
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		typ     frame.Type
		payload []byte
	}{
		{"stdout text", frame.Stdout, []byte("hello\n")},
		{"stderr binary", frame.Stderr, []byte{0xff, 0xfe, 0x00, 0x80, 'x'}},
		{"result json", frame.Result, []byte(`{"exit_code":0}`)},
		{"one byte", frame.Stdout, []byte{0}},
		{"exactly max", frame.Stderr, bytes.Repeat([]byte{'a'}, frame.MaxPayload)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, frame.Write(&buf, tc.typ, tc.payload))
			require.Equal(t, frame.HeaderSize+len(tc.payload), buf.Len())

			got, err := readAll(&buf)
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.Equal(t, tc.typ, got[0].typ)
			require.Equal(t, tc.payload, got[0].payload)
		})
	}
}

func TestWriteEmptyPayloadIsOneEmptyFrame(t *testing.T) {
	for _, p := range [][]byte{nil, {}} {
		var buf bytes.Buffer
		require.NoError(t, frame.Write(&buf, frame.Stdout, p))
		require.Equal(t, []byte{byte(frame.Stdout), 0, 0, 0, 0}, buf.Bytes())

		got, err := readAll(&buf)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, frame.Stdout, got[0].typ)
		require.Empty(t, got[0].payload)
	}
}

func TestWriteSplitsLargePayload(t *testing.T) {
	payload := make([]byte, 2*frame.MaxPayload+10)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	var buf bytes.Buffer
	require.NoError(t, frame.Write(&buf, frame.Stderr, payload))
	require.Equal(t, 3*frame.HeaderSize+len(payload), buf.Len())

	got, err := readAll(&buf)
	require.NoError(t, err)
	require.Len(t, got, 3)
	var joined []byte
	for i, want := range []int{frame.MaxPayload, frame.MaxPayload, 10} {
		require.Equal(t, frame.Stderr, got[i].typ)
		require.Len(t, got[i].payload, want, "frame %d", i)
		joined = append(joined, got[i].payload...)
	}
	require.Equal(t, payload, joined)
}

func TestSequenceKeepsOrderAndTypes(t *testing.T) {
	want := []decoded{
		{frame.Stdout, []byte("out 1")},
		{frame.Stderr, []byte("err 1")},
		{frame.Stdout, []byte{}},
		{frame.Result, []byte(`{}`)},
	}
	var buf bytes.Buffer
	for _, f := range want {
		require.NoError(t, frame.Write(&buf, f.typ, f.payload))
	}
	got, err := readAll(&buf)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestReaderTruncatedStream(t *testing.T) {
	var whole bytes.Buffer
	require.NoError(t, frame.Write(&whole, frame.Stdout, []byte("0123456789")))
	full := whole.Bytes()

	tests := []struct {
		name string
		cut  int
		want error
	}{
		{"empty stream is a clean end", 0, io.EOF},
		{"inside the header", 3, io.ErrUnexpectedEOF},
		{"after the header", frame.HeaderSize, io.ErrUnexpectedEOF},
		{"inside the payload", frame.HeaderSize + 4, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := frame.NewReader(bytes.NewReader(full[:tc.cut])).Next()
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestReaderRejectsOversizeHeader(t *testing.T) {
	hdr := make([]byte, frame.HeaderSize)
	hdr[0] = byte(frame.Stdout)
	binary.BigEndian.PutUint32(hdr[1:], frame.MaxPayload+1)
	// No payload follows: the reader must refuse on the header alone,
	// before trying to allocate or read it.
	typ, p, err := frame.NewReader(bytes.NewReader(hdr)).Next()
	require.ErrorIs(t, err, frame.ErrTooLarge)
	require.Equal(t, frame.Stdout, typ)
	require.Nil(t, p)

	binary.BigEndian.PutUint32(hdr[1:], 0xffffffff)
	_, _, err = frame.NewReader(bytes.NewReader(hdr)).Next()
	require.ErrorIs(t, err, frame.ErrTooLarge)
}

type failWriter struct{ after int }

var errSink = errors.New("sink failed")

func (w *failWriter) Write(p []byte) (int, error) {
	if w.after <= 0 {
		return 0, errSink
	}
	w.after--
	return len(p), nil
}

func TestWritePropagatesWriterErrors(t *testing.T) {
	tests := []struct {
		name  string
		after int // successful writes before the failure
	}{
		{"header", 0},
		{"payload", 1},
		{"second frame header", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := frame.Write(&failWriter{after: tc.after}, frame.Stdout, make([]byte, frame.MaxPayload+1))
			require.ErrorIs(t, err, errSink)
		})
	}
}

func TestTypeString(t *testing.T) {
	tests := map[frame.Type]string{
		frame.Stdout:  "stdout",
		frame.Stderr:  "stderr",
		frame.Result:  "result",
		frame.Type(9): "frame(9)",
	}
	for typ, want := range tests {
		require.Equal(t, want, typ.String())
	}
}

// The JSON names of Job and Report are the protocol between the host and an
// init baked into an image, possibly built from another version.
func TestJSONFieldNames(t *testing.T) {
	job := frame.Job{
		Argv: []string{"a"}, Env: []string{"K=V"}, Dir: "/w", Stdin: []byte("in"),
		TimeoutMS: 1, GraceMS: 2, OutputCap: 3,
	}
	b, err := json.Marshal(job)
	require.NoError(t, err)
	require.JSONEq(t, `{"argv":["a"],"env":["K=V"],"cwd":"/w","stdin":"aW4=",
		"timeout_ms":1,"grace_ms":2,"output_cap":3}`, string(b))

	var oomKills int64
	rep := frame.Report{
		ExitCode: 1, Signal: 2, TimedOut: true, StdoutBytes: 3, StderrBytes: 4,
		StdoutTruncated: true, StderrTruncated: true, UserCPUMS: 5, SystemCPUMS: 6,
		PeakRSSKB: 7, DurationMS: 8, Error: "e", OOMKills: &oomKills, Prestarted: true,
	}
	b, err = json.Marshal(rep)
	require.NoError(t, err)
	require.JSONEq(t, `{"exit_code":1,"signal":2,"timed_out":true,"stdout_bytes":3,
		"stderr_bytes":4,"stdout_truncated":true,"stderr_truncated":true,
		"user_cpu_ms":5,"system_cpu_ms":6,"peak_rss_kb":7,"duration_ms":8,"error":"e","oom_kills":0,"prestarted":true}`, string(b))

	// A report without the count (an older init) decodes with nil, not 0:
	// the host must then ask the engine.
	var old frame.Report
	require.NoError(t, json.Unmarshal([]byte(`{"exit_code":0}`), &old))
	require.Nil(t, old.OOMKills)
}

// FuzzReader feeds arbitrary bytes to the reader: it must never panic, never
// return more than MaxPayload, and end every stream with EOF or an error.
func FuzzReader(f *testing.F) {
	var seed bytes.Buffer
	_ = frame.Write(&seed, frame.Stdout, []byte("hello"))
	_ = frame.Write(&seed, frame.Result, nil)
	f.Add(seed.Bytes())
	f.Add([]byte{3, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := frame.NewReader(bytes.NewReader(data))
		consumed := 0
		for {
			_, p, err := fr.Next()
			if err != nil {
				return
			}
			require.LessOrEqual(t, len(p), frame.MaxPayload)
			consumed += frame.HeaderSize + len(p)
			require.LessOrEqual(t, consumed, len(data))
		}
	})
}

// FuzzRoundTrip checks that whatever is written is read back unchanged.
func FuzzRoundTrip(f *testing.F) {
	f.Add(byte(frame.Stdout), []byte("x"))
	f.Add(byte(frame.Result), []byte{})
	f.Fuzz(func(t *testing.T, typ byte, payload []byte) {
		var buf bytes.Buffer
		require.NoError(t, frame.Write(&buf, frame.Type(typ), payload))
		got, err := readAll(&buf)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, frame.Type(typ), got[0].typ)
		require.Equal(t, len(payload), len(got[0].payload))
		require.True(t, bytes.Equal(payload, got[0].payload))
	})
}
