package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/server"
)

type listAnswer struct {
	Sessions []struct {
		ID string `json:"id"`
	} `json:"sessions"`
	Partial     bool     `json:"partial"`
	Unreachable []string `json:"unreachable"`
}

func listOf(t *testing.T, url, tok string, header ...string) (ids []string, ans listAnswer) {
	t.Helper()
	r := call(t, "GET", url+"/v1/sessions", "", append(as(tok), header...)...)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "SessionList", r.body)
	require.NoError(t, json.Unmarshal(r.body, &ans))
	for _, s := range ans.Sessions {
		ids = append(ids, s.ID)
	}
	return ids, ans
}

// TestListAcrossReplicas: a list through any replica holds the caller's
// sessions on every replica, in the order of the replicas' numbers, and
// says which replicas did not answer; the header that keeps a list from
// fanning out twice shows nobody another token's sessions.
func TestListAcrossReplicas(t *testing.T) {
	p := startPair(t)
	a0 := newSession(t, p.url[0], tokenA)
	a1 := newSession(t, p.url[1], tokenA)
	b0 := newSession(t, p.url[0], tokenB)

	for i, u := range p.url {
		ids, ans := listOf(t, u, tokenA)
		require.Equal(t, []string{a0, a1}, ids, "through r-%d", i)
		require.False(t, ans.Partial)
		require.Empty(t, ans.Unreachable)
		require.NotNil(t, ans.Unreachable, "unreachable is a list, empty when every replica answered")
		ids, _ = listOf(t, u, tokenB)
		require.Equal(t, []string{b0}, ids, "through r-%d: another token's sessions are never listed", i)
	}

	t.Run("the peer header lists one replica's, marked partial", func(t *testing.T) {
		ids, ans := listOf(t, p.url[1], tokenA, server.ForwardedHeader, "r-0")
		require.Equal(t, []string{a1}, ids)
		require.True(t, ans.Partial)
		ids, ans = listOf(t, p.url[0], tokenB, server.ForwardedHeader, "r-1")
		require.Equal(t, []string{b0}, ids, "a caller who sets the header sees its own token's sessions only")
		require.True(t, ans.Partial)
		r := call(t, "GET", p.url[0]+"/v1/sessions", "", server.ForwardedHeader, "r-1")
		require.Equal(t, http.StatusUnauthorized, r.status, "the header never stands in for a token")
	})

	t.Run("a replica that does not answer is named", func(t *testing.T) {
		p.ts[0].Close()
		ids, ans := listOf(t, p.url[1], tokenA)
		require.Equal(t, []string{a1}, ids)
		require.True(t, ans.Partial)
		require.Equal(t, []string{"r-0"}, ans.Unreachable)
		require.Contains(t, p.log[1].String(), "a peer did not list the caller's sessions")
	})
}

func TestListOnOneServer(t *testing.T) {
	url, _ := startSessions(t)
	a := newSession(t, url, tokenA)
	ids, ans := listOf(t, url, tokenA)
	require.Equal(t, []string{a}, ids)
	require.False(t, ans.Partial)
	require.Empty(t, ans.Unreachable)
}
