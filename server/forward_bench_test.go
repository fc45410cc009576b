package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkForward compares a session call answered by its owner with the
// same call sent to the other replica and forwarded: a small GET (the
// added latency of a hop) and an 8 MiB upload (throughput through it).
//
//	go test ./server/ -run '^$' -bench Forward -benchtime 200x
func BenchmarkForward(b *testing.B) {
	p := startPair(b)
	var info struct{ ID string }
	require.NoError(b, json.Unmarshal(send(b, "POST", p.url[0]+"/v1/sessions", nil), &info))
	id := info.ID
	blob := bytes.Repeat([]byte("x"), 8<<20)
	for _, v := range []struct {
		name string
		url  string
	}{{"owner", p.url[0]}, {"forwarded", p.url[1]}} {
		b.Run("get/"+v.name, func(b *testing.B) {
			send(b, "PUT", v.url+"/v1/sessions/"+id+"/files/small.txt", []byte("hello"))
			for b.Loop() {
				send(b, "GET", v.url+"/v1/sessions/"+id+"/files/small.txt", nil)
			}
		})
		b.Run("put-8MiB/"+v.name, func(b *testing.B) {
			b.SetBytes(int64(len(blob)))
			for b.Loop() {
				send(b, "PUT", v.url+"/v1/sessions/"+id+"/files/blob.bin", blob)
			}
		})
	}
}

func send(b *testing.B, method, url string, body []byte) []byte {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(b, err)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b, err)
	out, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(b, err)
	require.Less(b, resp.StatusCode, 300, string(out))
	return out
}
