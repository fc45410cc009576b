package skill

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
)

// FuzzParseFrontmatter checks that no input panics the parser, that what it
// accepts re-parses to the same result once written back in canonical form,
// and that a manifest without fatal problems always has a name that can be
// its folder in the sandbox (its own, or the folder's).
func FuzzParseFrontmatter(f *testing.F) {
	seeds := []string{
		"",
		"---",
		"---\n---\n",
		"---\nname: demo\ndescription: d\n---\nbody\n",
		"\xef\xbb\xbf---\r\nname: demo\r\ndescription: d\r\n---\r\nbody\r\n",
		"---\nname: Demo\n---\n",
		"---\n- a\n---\n",
		"---\nname: [\n---\n",
		"---\nname: &a x\ndescription: *a\nmetadata: {k: *a}\n---\n",
		"---\nname: demo\ndescription: d\nallowed-tools: [\"Bash(git status:*)\", Read]\nmetadata:\n  max_memory: \"64\"\n  python_packages: \"a b\"\n---\n",
		"---\nname: demo\ndescription: d\nmax_memory: 64\nmetadata:\n  max_memory: \"128\"\n---\n",
		"---\nname: demo\ndescription: |\n  ---\n  x\n---\n",
		"---\n<<: {name: demo}\ndescription: d\n---\n",
		"---\nname: demo\ndescription: d\n---\n\xff\xfe",
		"---\nname: \"\\u00e9\"\ndescription: d\n---\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fm, body, err := splitForTest(data)
		if err != nil {
			return
		}
		s, probs, err := parseSkillFile(bytes.NewReader(data), "SKILL.md", true)
		if err != nil {
			return
		}
		require.Equal(t, strings.ReplaceAll(string(body), "\r\n", "\n"), s.Body)

		canonical := append(append(append([]byte("---\n"), fm.yaml...), "---\n"...), body...)
		fm2, body2, err := splitForTest(canonical)
		require.NoError(t, err)
		require.Equal(t, fm.yaml, fm2.yaml)
		require.Equal(t, body, body2)
		require.Equal(t, fm.bodyLine, fm2.bodyLine)
		s2, probs2, err := parseSkillFile(bytes.NewReader(canonical), "SKILL.md", true)
		require.NoError(t, err)
		require.Equal(t, s.Manifest, s2.Manifest)
		require.Equal(t, probs, probs2)

		probs = append(probs, settleName(&s.Manifest, "folder")...)
		if len(messages(probs, sevFatal)) == 0 {
			require.True(t, policy.ValidSandboxName(s.Manifest.Name), "a usable manifest has a name that can be a folder: %q", s.Manifest.Name)
			require.NotContains(t, s.Manifest.Name, "/")
			require.NotEmpty(t, strings.TrimSpace(s.Manifest.Description))
		}
	})
}

// splitForTest returns the frontmatter and the raw rest of data.
func splitForTest(data []byte) (frontmatter, []byte, error) {
	br := bufio.NewReader(bytes.NewReader(data))
	fm, err := readFrontmatter(br, "SKILL.md")
	if err != nil {
		return fm, nil, err
	}
	rest, err := io.ReadAll(br)
	return fm, rest, err
}
