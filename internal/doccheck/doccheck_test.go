package doccheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/doccheck"
)

// TestRepositoryHasNoDeadReference is the guard itself: every link in the
// repository's Markdown and every section its comments cite must exist.
func TestRepositoryHasNoDeadReference(t *testing.T) {
	root := moduleRoot(t)
	problems, err := doccheck.Check(root)
	require.NoError(t, err)
	var lines []string
	for _, p := range problems {
		lines = append(lines, p.String())
	}
	require.Empty(t, lines, "dead references; fix the link, or the heading it names:\n%s", strings.Join(lines, "\n"))
}

// The checker must be able to fail: each broken fixture is found, at its
// line, and the good fixture (wrapped citations, duplicate headings, code
// in a heading, fenced code, external links) passes.
func TestCheckFindsDeadReferences(t *testing.T) {
	cases := []struct {
		fixture string
		want    []string // substrings of the problems, in order
	}{
		{"good", nil},
		{"broken", []string{
			"Makefile:1: cites README.md, \"Performance\": the page has no such section",
			"README.md:3: link \"docs/gone.md\": docs/gone.md does not exist",
			"README.md:3: link \"docs/guide.md#performance\": docs/guide.md has no heading with anchor #performance",
			"README.md:3: link \"#nowhere\": README.md has no heading with anchor #nowhere",
			"README.md:3: link \"img/missing.png\": img/missing.png does not exist",
			"hack/up.sh:2: cites README.md, \"Running on Kubernetes\": the page has no such section",
			"hack/up.sh:2: cites docs/kubernetes.md: link \"docs/kubernetes.md\": docs/kubernetes.md does not exist",
			"hack/up.sh:5: cites README.md, \"Broken page\": the page has no such section",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.fixture, func(t *testing.T) {
			problems, err := doccheck.Check(filepath.Join("testdata", tc.fixture))
			require.NoError(t, err)
			require.Len(t, problems, len(tc.want), "%v", problems)
			for i, w := range tc.want {
				require.Contains(t, problems[i].String(), w)
			}
		})
	}
}

func TestSlugFollowsGitHub(t *testing.T) {
	for heading, want := range map[string]string{
		"Sessions and files": "sessions-and-files",
		"A host folder instead: sandboxrun mcp --workspace DIR": "a-host-folder-instead-sandboxrun-mcp---workspace-dir",
		"Limits (operator policy)":                              "limits-operator-policy",
		"What `policy check` prints":                            "what-policy-check-prints",
		"Kubernetes, and several servers":                       "kubernetes-and-several-servers",
		"snake_case stays":                                      "snake_case-stays",
		"Überblick":                                             "überblick",
	} {
		require.Equal(t, want, doccheck.Slug(heading), heading)
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test")
		dir = parent
	}
}
