package images

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStepIDs(t *testing.T) {
	out := "Step 1/8 : ARG BASE=sandboxrun/base:bookworm\n" +
		"Step 2/8 : FROM ${BASE}\n ---> 5d0da3dc9764\n" +
		"Step 3/8 : RUN set -eu\n ---> Running in 1a2b3c4d5e6f\n" +
		"Removing intermediate container 1a2b3c4d5e6f\n ---> 8b7f6e5d4c3b\r\n" +
		"Step 4/8 : COPY sandbox-init /usr/local/bin/sandbox-init\n ---> Using cache\n ---> 0123456789ab\n" +
		" ---> ABCDEF012345\n ---> 0123456789ab trailing\n ---> 99999999999"
	s := &stepIDs{}
	// Feed it in awkward chunks: IDs split across writes must still count.
	for i := 0; i < len(out); i += 7 {
		end := min(i+7, len(out))
		n, err := s.Write([]byte(out[i:end]))
		require.NoError(t, err)
		require.Equal(t, end-i, n)
	}
	require.Equal(t, []string{"5d0da3dc9764", "8b7f6e5d4c3b", "0123456789ab"}, s.list())
}
