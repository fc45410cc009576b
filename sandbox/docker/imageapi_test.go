package docker

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/images/imageapi"
)

func TestRelayPrintsWhatTheCLIPrints(t *testing.T) {
	body := strings.Join([]string{
		`{"stream":"Step 1/2 : FROM base\n"}`,
		`{"stream":" ---\u003e 0123456789ab\n"}`,
		`{"status":"Pulling fs layer","progressDetail":{},"id":"abc"}`,
		`{"status":"Downloading","progressDetail":{"current":1,"total":2},"progress":"[=>  ]","id":"abc"}`,
		`{"status":"Digest: sha256:1"}`,
		`{"aux":{"ID":"sha256:built"}}`,
	}, "\n")
	var out bytes.Buffer
	var auxes int
	require.NoError(t, relay(strings.NewReader(body), &out, func(m *streamMessage) {
		if m.Aux != nil {
			auxes++
		}
	}))
	require.Equal(t, "Step 1/2 : FROM base\n ---> 0123456789ab\nabc: Pulling fs layer\nDigest: sha256:1\n", out.String(),
		"progress ticks are left out, as without a terminal")
	require.Equal(t, 1, auxes)
}

func TestRelayEndsWithTheStreamsError(t *testing.T) {
	step := `{"stream":"Step 2/2 : RUN exit 7\n"}` + "\n" +
		`{"errorDetail":{"code":7,"message":"The command '/bin/sh -c exit 7' returned a non-zero code: 7"},"error":"The command '/bin/sh -c exit 7' returned a non-zero code: 7"}`
	err := relay(strings.NewReader(step), nil, nil)
	var se *imageapi.StepError
	require.True(t, errors.As(err, &se), "%v", err)
	require.Equal(t, 7, se.Code)

	err = relay(strings.NewReader(`{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}`), nil, nil)
	require.EqualError(t, err, "manifest unknown")
	require.False(t, errors.As(err, &se))

	require.ErrorContains(t, relay(strings.NewReader(`{"stream":`), nil, nil), "read the engine's answer")
}
