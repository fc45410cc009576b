package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSessionsPartial: a list that lacks a replica's sessions comes back
// with the sessions it has and an error naming the replica.
func TestSessionsPartial(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		ids        []string
		missing    []string
		partial    bool
	}{
		{"whole", `{"sessions": [{"id": "r-0-a"}, {"id": "r-1-b"}], "partial": false, "unreachable": []}`, []string{"r-0-a", "r-1-b"}, nil, false},
		{"a replica away", `{"sessions": [{"id": "r-0-a"}], "partial": true, "unreachable": ["r-1"]}`, []string{"r-0-a"}, []string{"r-1"}, true},
		{"peers unknown", `{"sessions": [{"id": "r-0-a"}], "partial": true, "unreachable": []}`, []string{"r-0-a"}, []string{}, true},
		{"an older server", `{"sessions": [{"id": "a"}]}`, []string{"a"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			c, err := New(srv.URL, WithToken(""))
			require.NoError(t, err)
			list, err := c.Sessions(context.Background())
			var ids []string
			for _, s := range list {
				ids = append(ids, s.ID)
			}
			require.Equal(t, tc.ids, ids)
			if !tc.partial {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrPartialList)
			var pe *PartialListError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tc.missing, pe.Unreachable)
		})
	}
}
