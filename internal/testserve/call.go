package testserve

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// Call sends one request and reads the whole answer: its status and body,
// or -1 and nil when the exchange failed (refused, cancelled by ctx, or an
// answer cut short). A load driver counts a failure and goes on, so Call
// returns no error: a server killed or stopped under load is what some of
// them test.
func Call(ctx context.Context, method, url string, body []byte) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return -1, nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1, nil
	}
	return resp.StatusCode, b
}
