package images

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
)

func TestProfileRef(t *testing.T) {
	tests := []struct{ runner, profile, want string }{
		{"sandboxrun/runner:0.1.0", "documents", "sandboxrun/runner:0.1.0-documents"},
		{"sandboxrun/runner:0.1.0", "", "sandboxrun/runner:0.1.0"},
		{"registry.example:5000/team/runner", "office", "registry.example:5000/team/runner:latest-office"},
		{"registry.example:5000/team/runner:v2", "documents", "registry.example:5000/team/runner:v2-documents"},
	}
	for _, tt := range tests {
		got, err := ProfileRef(tt.runner, tt.profile)
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
	}
	_, err := ProfileRef("sandboxrun/runner@sha256:abc", "documents")
	require.ErrorContains(t, err, "by tag, not by digest")
	_, err = ProfileRef("sandboxrun/runner:1", "desktop")
	require.ErrorIs(t, err, policy.ErrUnknownProfile)
}

func TestProfileDockerfile(t *testing.T) {
	for _, name := range policy.RunnerProfiles() {
		pkgs, err := ProfilePackages(name)
		require.NoError(t, err)
		require.NotEmpty(t, pkgs)
		df := string(profileDockerfile(pkgs))
		require.Contains(t, df, "apt-get install -y -q --no-install-recommends "+quoteAll(pkgs))
		require.Contains(t, df, "-perm /6000 -exec chmod ug-s", "a profile adds programs, never set-id bits")
		require.True(t, strings.HasSuffix(strings.TrimSpace(df), "WORKDIR /workspace"))
		require.Contains(t, df, "USER 65532:65532", "it ends as the runner does")
		require.Contains(t, df, "rm -rf /var/lib/apt/lists/*")
	}
	docs, err := ProfilePackages(policy.ProfileDocuments)
	require.NoError(t, err)
	for _, p := range []string{"python3-pypdf", "python3-openpyxl", "python3-docx", "python3-pandas", "python3-yaml", "python3-pil", "poppler-utils"} {
		require.Contains(t, docs, p)
	}
	_, err = ProfilePackages("")
	require.ErrorIs(t, err, policy.ErrUnknownProfile)
}
