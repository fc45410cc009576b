package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScreenAnswersWhatIsNotJSONRPC(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":9,"method":"x","params":{"p":"` + strings.Repeat("a", MaxMessageBytes) + `"}}`
	lines := []struct {
		in   string
		code int    // 0: passed on
		id   string // of the error answer
	}{
		{"not json", codeParseError, "null"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"`, codeParseError, "null"},
		{"\xff\xfe", codeParseError, "null"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, codeInvalidRequest, "null"},
		{`42`, codeInvalidRequest, "null"},
		{`{"id":3,"method":"ping"}`, codeInvalidRequest, "3"},
		{`{"jsonrpc":"1.0","id":"a","method":"ping"}`, codeInvalidRequest, `"a"`},
		{`{"jsonrpc":"2.0","id":4}`, codeInvalidRequest, "4"},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, codeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":5,"method":""}`, codeInvalidRequest, "5"},
		{big, codeInvalidRequest, "null"},
		{"", 0, ""},
		{`{"jsonrpc":"2.0","id":6,"method":"ping"}`, 0, ""},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, ""},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, 0, ""},
	}
	var in strings.Builder
	var passed []string
	var answers []struct {
		code int
		id   string
	}
	for _, l := range lines {
		in.WriteString(l.in + "\n")
		if l.code == 0 && l.in != "" {
			passed = append(passed, l.in)
		} else if l.code != 0 {
			answers = append(answers, struct {
				code int
				id   string
			}{l.code, l.id})
		}
	}
	var out bytes.Buffer
	got, err := io.ReadAll(screen(strings.NewReader(in.String()), &syncWriter{w: &out}))
	require.NoError(t, err)
	require.Equal(t, strings.Join(passed, "\n")+"\n", string(got))
	sc := bufio.NewScanner(&out)
	for _, want := range answers {
		require.True(t, sc.Scan(), "an answer for each refused line")
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &resp))
		require.Equal(t, "2.0", resp.JSONRPC)
		require.Equal(t, want.code, resp.Error.Code, sc.Text())
		require.Equal(t, want.id, string(resp.ID))
		require.NotEmpty(t, resp.Error.Message)
	}
	require.False(t, sc.Scan(), "nothing else written: %s", sc.Text())
}
