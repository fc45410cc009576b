package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSessionRules(t *testing.T) {
	tests := []struct {
		name, yaml string
		check      func(t *testing.T, r SessionRules)
		err        string
	}{
		{name: "defaults", yaml: "network: none\n", check: func(t *testing.T, r SessionRules) {
			require.False(t, r.Root.Set)
			require.True(t, r.Write.Value)
			require.Equal(t, Duration(30*time.Minute), r.TTL.Value)
			require.Equal(t, Duration(24*time.Hour), r.MaxTTL.Value)
			require.Equal(t, Size(1<<30), r.Quota.Value)
			require.Equal(t, Count(32), r.MaxPerToken.Value)
			require.Equal(t, Size(10<<30), r.MaxTotalBytes.Value)
			require.Equal(t, Count(10000), r.MaxFiles.Value)
			require.Equal(t, Count(32), r.MaxDepth.Value)
		}},
		{name: "depth too deep", yaml: "sessions:\n  max_depth: 2000\n", err: "sessions.max_depth 2000: use at most 1024"},
		{name: "all set", yaml: "sessions:\n  root: /srv/s\n  write: false\n  ttl: 10m\n  max_ttl: 1h\n  quota: 64Mi\n  max_per_token: 3\n  max_total_bytes: 1Gi\n",
			check: func(t *testing.T, r SessionRules) {
				require.Equal(t, "/srv/s", r.Root.Value)
				require.False(t, r.Write.Value)
				require.Equal(t, Duration(10*time.Minute), r.TTL.Value)
				require.Equal(t, Duration(time.Hour), r.MaxTTL.Value)
				require.Equal(t, Size(64<<20), r.Quota.Value)
				require.Equal(t, Count(3), r.MaxPerToken.Value)
				require.Equal(t, Size(1<<30), r.MaxTotalBytes.Value)
				require.Equal(t, 2, r.Root.Line)
			}},
		{name: "unknown key", yaml: "sessions:\n  quoat: 1Gi\n", err: `line 2: sessions: unknown key "quoat"`},
		{name: "relative root", yaml: "sessions:\n  root: data/s\n", err: "sessions.root \"data/s\" is not an absolute path"},
		{name: "ttl above max", yaml: "sessions:\n  ttl: 2h\n  max_ttl: 1h\n", err: "sessions.ttl 7200s is above sessions.max_ttl 3600s"},
		{name: "ttl above builtin max", yaml: "sessions:\n  ttl: 48h\n", err: "above sessions.max_ttl"},
		{name: "quota above total", yaml: "sessions:\n  quota: 2Gi\n  max_total_bytes: 1Gi\n", err: "sessions.quota 2GiB is above sessions.max_total_bytes 1GiB"},
		{name: "bare quota", yaml: "sessions:\n  quota: 100\n", err: "is not a size; write a number with a unit"},
		{name: "zero per token", yaml: "sessions:\n  max_per_token: 0\n", err: "not a whole number above 0"},
		{name: "not a mapping", yaml: "sessions: on\n", err: "expected a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParsePolicy("p.yaml", []byte(tt.yaml))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			tt.check(t, o.Sessions)
		})
	}
}

func TestSessionEntries(t *testing.T) {
	o, err := ParsePolicy("p.yaml", []byte("sessions:\n  quota: 64Mi\n"))
	require.NoError(t, err)
	got := map[string]Entry{}
	for _, e := range o.Entries() {
		got[e.Key] = e
	}
	require.Equal(t, Entry{"sessions.quota", "64MiB", "line 2"}, got["sessions.quota"])
	require.Equal(t, "builtin default", got["sessions.ttl"].From)
	require.Equal(t, "30m0s", got["sessions.ttl"].Value)
}
