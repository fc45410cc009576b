package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// JSON-RPC 2.0 error codes for what never reaches the protocol layer.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// screen stands between a host's stdin and the SDK's transport, which ends
// the connection on the first line it cannot parse: a line that is not
// JSON is answered with a parse error (-32700), one that is JSON but not a
// JSON-RPC 2.0 message, or over MaxMessageBytes, with an invalid request
// (-32600), as JSON-RPC says, and the server reads on. What passes comes
// out of the returned reader a line at a time; out must be the writer the
// transport writes to (a syncWriter), so answers never interleave.
func screen(in io.Reader, out *syncWriter) *io.PipeReader {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			line, over, err := readLine(br, MaxMessageBytes)
			if over {
				out.reject(nil, codeInvalidRequest, fmt.Sprintf("the message is over %d bytes", MaxMessageBytes))
			} else if msg := bytes.TrimSpace(line); len(msg) > 0 {
				if id, code, why := check(msg); code != 0 {
					out.reject(id, code, why)
				} else if _, werr := pw.Write(append(msg, '\n')); werr != nil {
					return // the server stopped reading
				}
			}
			if err != nil {
				_ = pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// readLine reads up to a newline; a line over limit is read to its end
// and dropped (over is true).
func readLine(br *bufio.Reader, limit int) (line []byte, over bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !over {
			if len(line)+len(chunk) > limit {
				over, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, over, err
	}
}

// check judges one line: code 0 when it is a JSON-RPC 2.0 request,
// notification or response the SDK may read; else the error to answer
// with, and the request's id when it has a usable one.
func check(msg []byte) (id json.RawMessage, code int, why string) {
	if !json.Valid(msg) {
		return nil, codeParseError, "the line is not JSON: each message is one JSON-RPC 2.0 object on one line"
	}
	var m struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if msg[0] != '{' || json.Unmarshal(msg, &m) != nil {
		return nil, codeInvalidRequest, "a message is one JSON-RPC 2.0 object (batches are not accepted)"
	}
	if len(m.ID) > 0 && m.ID[0] != '"' && (m.ID[0] < '0' || m.ID[0] > '9') && m.ID[0] != '-' {
		return nil, codeInvalidRequest, `"id" must be a string or a number`
	}
	switch {
	case m.JSONRPC == nil || *m.JSONRPC != "2.0":
		return m.ID, codeInvalidRequest, `"jsonrpc" must be "2.0"`
	case m.Method != nil && *m.Method == "":
		return m.ID, codeInvalidRequest, `"method" must not be empty`
	case m.Method == nil && (len(m.ID) == 0 || len(m.Result) == 0 && len(m.Error) == 0):
		return m.ID, codeInvalidRequest, `a message needs a "method" (a request) or an "id" with "result" or "error" (a response)`
	}
	return nil, 0, ""
}

// syncWriter serialises whole messages to the host's stdout.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (*syncWriter) Close() error { return nil }

// reject writes a JSON-RPC error response.
func (s *syncWriter) reject(id json.RawMessage, code int, message string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": message},
	})
	_, _ = s.Write(append(b, '\n'))
}
