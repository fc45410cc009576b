package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSkillUploadRules(t *testing.T) {
	tests := []struct {
		name, yaml string
		check      func(t *testing.T, r SkillUploadRules)
		err        string
	}{
		{name: "off by default", yaml: "network: none\n", check: func(t *testing.T, r SkillUploadRules) {
			require.False(t, r.Enabled())
			require.Equal(t, UploadsNone, r.Allow.Value)
			require.Equal(t, Size(30<<20), r.MaxUploadBytes.Value)
			require.Equal(t, Count(1000), r.MaxFiles.Value)
			require.Equal(t, Count(32), r.MaxSkillsPerToken.Value)
			require.Equal(t, Count(16), r.MaxVersions.Value)
		}},
		{name: "all set", yaml: "skill_uploads:\n  allow: tokens\n  store: /srv/skills\n  max_upload_bytes: 1Mi\n  max_files: 10\n  max_skills_per_token: 2\n  max_versions: 3\n",
			check: func(t *testing.T, r SkillUploadRules) {
				require.True(t, r.Enabled())
				require.Equal(t, "/srv/skills", r.Store.Value)
				require.Equal(t, Size(1<<20), r.MaxUploadBytes.Value)
				require.Equal(t, Count(10), r.MaxFiles.Value)
				require.Equal(t, Count(2), r.MaxSkillsPerToken.Value)
				require.Equal(t, Count(3), r.MaxVersions.Value)
			}},
		{name: "unknown key", yaml: "skill_uploads:\n  allow: tokens\n  grants: {}\n", err: `line 3: skill_uploads: unknown key "grants"`},
		{name: "bad allow", yaml: "skill_uploads:\n  allow: everyone\n", err: "skill_uploads.allow"},
		{name: "relative store", yaml: "skill_uploads:\n  store: skills\n", err: `skill_uploads.store "skills" is not an absolute path`},
		{name: "zero files", yaml: "skill_uploads:\n  max_files: 0\n", err: "not a whole number above 0"},
		{name: "too many files", yaml: "skill_uploads:\n  max_files: 100001\n", err: "skill_uploads.max_files 100001: use 1 to 100000"},
		{name: "huge upload", yaml: "skill_uploads:\n  max_upload_bytes: 2Gi\n", err: "skill_uploads.max_upload_bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParsePolicy("p.yaml", []byte(tc.yaml))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			tc.check(t, o.SkillUploads)
		})
	}
}

// An uploaded skill named like a granted operator skill gets none of its
// grants.
func TestForUploadedDropsGrantsByName(t *testing.T) {
	o, err := ParsePolicy("p.yaml", []byte("network: none\nskills:\n  billing:\n    network: declared\n    allowed-tools: Write\n"))
	require.NoError(t, err)
	require.NotEmpty(t, o.ExtraTools("billing"))
	up := o.ForUploaded()
	require.Empty(t, up.ExtraTools("billing"))
	net, _ := up.network("billing")
	require.Equal(t, NetworkNone, net)
	require.NotEmpty(t, o.ExtraTools("billing"), "the operator's policy is unchanged")
	require.Equal(t, o.Digest, up.Digest)
}

func TestCacheRules(t *testing.T) {
	o, err := ParsePolicy("p.yaml", []byte("network: none\n"))
	require.NoError(t, err)
	require.Zero(t, o.CacheTTL("any"), "off by default")
	o, err = ParsePolicy("p.yaml", []byte("cache:\n  ttl: 10m\n  max_bytes: 1Mi\n  shared: true\nskills:\n  report:\n    cache: {ttl: 1h}\n"))
	require.NoError(t, err)
	require.Equal(t, 10*time.Minute, o.CacheTTL("other"))
	require.Equal(t, time.Hour, o.CacheTTL("report"))
	require.Equal(t, 10*time.Minute, o.ForUploaded().CacheTTL("report"), "an upload never gets skills.<name>'s ttl")
	require.Equal(t, int64(1<<20), o.CacheMaxBytes())
	require.True(t, o.CacheShared())
	for yaml, want := range map[string]string{
		"cache:\n  ttl: 48h\n":                                "cache.ttl",
		"cache:\n  tll: 1m\n":                                 `unknown key "tll"`,
		"skills:\n  r:\n    cache: {ttl: 1m, shared: true}\n": "only ttl may be set per skill",
	} {
		_, err := ParsePolicy("p.yaml", []byte(yaml))
		require.ErrorContains(t, err, want, yaml)
	}
}
