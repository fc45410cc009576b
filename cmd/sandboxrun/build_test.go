package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/images"
)

func TestBuildRefusals(t *testing.T) {
	isolateEnv(t)
	root := t.TempDir()
	writeSkill(t, root, "plain", frontmatter("plain"), "Body.\n", map[string]string{"scripts/a.py": "print(1)\n"})
	writeSkill(t, root, "badpep", frontmatter("badpep"), "Body.\n", map[string]string{
		"scripts/a.py": "# /// script\n# dependencies = \"tabulate\"\n# ///\n",
	})
	writeSkill(t, root, "deps", frontmatter("deps", "metadata:", `  system_packages: "bc"`), "Body.\n", nil)

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"no skill and no --all", []string{"build"}, exitRefused, "", "SKILL names or --all"},
		{"skills and --all", []string{"build", "--all", "plain"}, exitRefused, "", "SKILL names or --all"},
		{"unknown skill", []string{"build", "nosuch"}, exitRefused, "", "nosuch"},
		{"skill without packages needs no image", []string{"build", "plain"}, exitOK, "plain: declares no packages; runs in sandboxrun/runner:", ""},
		{"malformed PEP 723 names the line", []string{"build", "badpep"}, exitRefused, "", "scripts/a.py:2:"},
		{"bad --index-url is refused before Docker", []string{"build", "--index-url", "not a url", "deps"}, exitRefused, "", "--index-url"},
		{"bad --find-links is refused before Docker", []string{"build", "--find-links", "/nonexistent/wheels", "deps"}, exitRefused, "", "--find-links"},
		{"a real build needs Docker", []string{"build", "deps"}, exitEnv, "", "docker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", append([]string{"--skills", root}, tt.args...)...)
			r.requireCode(t, tt.code)
			require.Contains(t, r.stdout, tt.stdout)
			require.Contains(t, r.stderr, tt.stderr)
		})
	}
}

func TestRunRefusesMalformedDependenciesBeforeDocker(t *testing.T) {
	isolateEnv(t)
	root := t.TempDir()
	writeSkill(t, root, "badpep", frontmatter("badpep"), "Body.\n", map[string]string{
		"scripts/a.py": "# /// script\n# dependencies = [\"ok\",\n# ///\n",
	})
	r := cli(t, "", "--skills", root, "run", "--workspace", t.TempDir(), "badpep", "scripts/a.py")
	r.requireCode(t, exitRefused)
	require.Contains(t, r.stderr, "scripts/a.py:2:")
}

func TestImagesListNeedsDocker(t *testing.T) {
	isolateEnv(t)
	r := cli(t, "", "images", "list")
	r.requireCode(t, exitEnv)
	require.Contains(t, r.stderr, "docker")
}

func TestBuildAllWithoutDocker(t *testing.T) {
	isolateEnv(t)
	root := t.TempDir()
	writeSkill(t, root, "plain", frontmatter("plain"), "Body.\n", nil)
	writeSkill(t, root, "deps-a", frontmatter("deps-a", "metadata:", `  system_packages: "bc"`), "Body.\n", nil)
	writeSkill(t, root, "deps-b", frontmatter("deps-b", "metadata:", `  system_packages: "jq"`), "Body.\n", nil)

	r := cli(t, "", "--skills", root, "build", "--all")
	r.requireCode(t, exitEnv)
	require.Equal(t, 1, strings.Count(r.stderr, "docker daemon unreachable"), "stop at the first Docker failure: %s", r.stderr)
	require.NotContains(t, r.stderr, "failed to build", "no tally of builds that were never tried")
}

func TestImagesPruneWithoutDocker(t *testing.T) {
	isolateEnv(t)
	r := cli(t, "", "--skills", exampleSkills, "images", "prune", "--dry-run")
	r.requireCode(t, exitEnv)
	require.NotContains(t, r.stdout, "no skill image to remove", "nothing was checked, so nothing can be claimed")
	require.Contains(t, r.stderr, "docker daemon unreachable")
}

func TestPipConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"PIP_INDEX_URL":    " https://pypi.example.com/simple ",
		"PIP_FIND_LINKS":   "/srv/wheels  https://example.com/links/",
		"PIP_TRUSTED_HOST": "pypi.example.com other:8080",
	}
	c := pipConfigFromEnv(func(k string) string { return env[k] })
	require.Equal(t, images.PipConfig{
		IndexURL:     "https://pypi.example.com/simple",
		FindLinks:    []string{"/srv/wheels", "https://example.com/links/"},
		TrustedHosts: []string{"pypi.example.com", "other:8080"},
	}, c)
	empty := pipConfigFromEnv(func(string) string { return "" })
	require.Empty(t, empty.IndexURL)
	require.Empty(t, empty.FindLinks)
	require.Empty(t, empty.TrustedHosts)
}
