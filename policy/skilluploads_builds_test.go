package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestUploadBuildRules(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       UploadBuildRules
		err        string
	}{
		{name: "off by default, bounded when turned on", yaml: "network: none\n",
			want: UploadBuildRules{Allow: Setting[bool]{Value: false}, Timeout: Setting[Duration]{Value: Duration(5 * time.Minute)}, MaxConcurrentPerToken: Setting[Count]{Value: 1}}},
		{name: "all set", yaml: "skill_uploads:\n  builds:\n    allow: true\n    timeout: 90s\n    max_concurrent_per_token: 2\n",
			want: UploadBuildRules{Allow: Setting[bool]{Value: true}, Timeout: Setting[Duration]{Value: Duration(90 * time.Second)}, MaxConcurrentPerToken: Setting[Count]{Value: 2}}},
		{name: "unknown key", yaml: "skill_uploads:\n  builds:\n    disk: 1Gi\n", err: `line 3: skill_uploads.builds: unknown key "disk"`},
		{name: "timeout past the build container's bound", yaml: "skill_uploads:\n  builds:\n    timeout: 1h\n", err: "skill_uploads.builds.timeout 3600s: use above 0s and at most 1200s"},
		{name: "no builds at once", yaml: "skill_uploads:\n  builds:\n    max_concurrent_per_token: 0\n", err: "not a whole number above 0"},
		{name: "too many at once", yaml: "skill_uploads:\n  builds:\n    max_concurrent_per_token: 65\n", err: "skill_uploads.builds.max_concurrent_per_token 65: use 1 to 64"},
		{name: "not a bool", yaml: "skill_uploads:\n  builds:\n    allow: tokens\n", err: "line 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParsePolicy("p.yaml", []byte(tc.yaml))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			b := o.SkillUploads.Builds
			require.Equal(t, tc.want.Allow.Value, b.Allow.Value)
			require.Equal(t, tc.want.Timeout.Value, b.Timeout.Value)
			require.Equal(t, tc.want.MaxConcurrentPerToken.Value, b.MaxConcurrentPerToken.Value)
		})
	}
}

func TestUploadBuildRulesAreShown(t *testing.T) {
	o, err := ParsePolicy("p.yaml", []byte("skill_uploads:\n  builds: {allow: true}\n"))
	require.NoError(t, err)
	shown := map[string]string{}
	for _, e := range o.SkillUploads.entries() {
		shown[e.Key] = e.Value
	}
	require.Equal(t, "true", shown[UploadBuildsKey])
	require.Equal(t, "300s", shown[UploadBuildsTimeoutKey])
	require.Equal(t, "1", shown[UploadBuildsConcurrencyKey])
}
