package skill

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, root, "zeta", doc("name: zeta\ndescription: Last.\n", "body"), nil)
	writeSkill(t, root, "alpha", doc("name: alpha\ndescription: First.\n", "body"), nil)
	writeSkill(t, root, "broken-yaml", doc("name: x\ndescription: a: b\n", ""), nil)
	writeSkill(t, root, "broken-limit", doc("name: broken-limit\ndescription: d\nmetadata:\n  max_memory: \"1\"\n", ""), nil)
	// Same name as alpha, in a folder of another name: alpha/ keeps it.
	writeSkill(t, root, "alpha-copy", doc("name: alpha\ndescription: Copy.\n", ""), nil)
	writeSkill(t, root, ".hidden", doc("name: hidden\ndescription: d\n", ""), nil)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "shared"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "README.md"), []byte("x"), 0o644))
	// The lowercase spelling counts too.
	lower := filepath.Join(root, "lower")
	require.NoError(t, os.MkdirAll(lower, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(lower, "skill.md"), []byte(doc("name: lower\ndescription: d\n", "")), 0o644))

	skills, errs := Discover(root)
	var names []string
	for _, s := range skills {
		names = append(names, s.Manifest.Name)
		require.Empty(t, s.Body, "Discover reads metadata only")
		require.True(t, filepath.IsAbs(s.Dir))
	}
	require.Equal(t, []string{"alpha", "lower", "zeta"}, names)
	require.Equal(t, filepath.Join(root, "alpha"), skills[0].Dir)
	require.Equal(t, "First.", skills[0].Manifest.Description)

	require.Len(t, errs, 3)
	var parseErr *ParseError
	var manifestErr *ManifestError
	var dup int
	for _, err := range errs {
		switch {
		case errors.As(err, &parseErr):
			require.ErrorIs(t, err, ErrInvalidYAML)
			require.Equal(t, filepath.Join(root, "broken-yaml", "SKILL.md"), parseErr.Path)
		case errors.As(err, &manifestErr):
			require.ErrorIs(t, err, ErrInvalidManifest)
			require.Contains(t, err.Error(), "metadata.max_memory")
		default:
			require.Contains(t, err.Error(), `skill name "alpha" is already used by `+filepath.Join(root, "alpha"))
			dup++
		}
	}
	require.Equal(t, 1, dup)
}

func TestDiscoverMissingRoot(t *testing.T) {
	skills, errs := Discover(filepath.Join(t.TempDir(), "nope"))
	require.Empty(t, skills)
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], os.ErrNotExist)
}

func TestSkillFilePrefersUppercase(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "skill.md"), []byte(doc("name: lower\ndescription: d\n", "")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(doc("name: upper\ndescription: d\n", "")), 0o644))
	s, err := LoadMeta(dir)
	require.NoError(t, err)
	require.Equal(t, "upper", s.Manifest.Name)
	require.Equal(t, filepath.Join(dir, "SKILL.md"), s.Path)

	_, err = FindFile(t.TempDir())
	require.ErrorIs(t, err, ErrNoSkillFile)
}

func TestLoadErrors(t *testing.T) {
	root := t.TempDir()
	ok := writeSkill(t, root, "demo", doc(minimalFront, "# Body\n"), nil)
	bad := writeSkill(t, root, "bad", doc("name: Bad_Name\ndescription: d\nmetadata:\n  max_cpus: \"0\"\n", ""), nil)
	s, err := Load(ok)
	require.NoError(t, err)
	require.Equal(t, "# Body\n", s.Body)

	_, err = Load(bad)
	var me *ManifestError
	require.ErrorAs(t, err, &me)
	require.ErrorIs(t, err, ErrInvalidManifest)
	require.Equal(t, filepath.Join(bad, "SKILL.md"), me.Path)
	require.Len(t, me.Problems, 1, "max_cpus only; the name's rules are warnings: %q", me.Problems)

	_, err = Load(filepath.Join(ok, "SKILL.md"))
	require.ErrorIs(t, err, ErrNotDir)

	// Problems that do not make the skill unusable do not stop Load.
	loose := writeSkill(t, root, "loose", doc("name: other-name\ndescription: d\nauthor: me\nmetadata:\n  version: 2\n", ""), nil)
	_, err = Load(loose)
	require.NoError(t, err)
}

func TestResolve(t *testing.T) {
	root := t.TempDir()
	demo := writeSkill(t, root, "demo", doc(minimalFront, ""), nil)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "empty"), 0o755))
	t.Chdir(demo)

	tests := []struct {
		name, ref, want string
		err             error
	}{
		{"by name", "demo", demo, nil},
		{"relative path", "../demo", demo, nil},
		{"absolute path", demo, demo, nil},
		{"dot", ".", demo, nil},
		{"dot dot is a path", "..", "", ErrNoSkillFile},
		{"unknown name", "nope", "", ErrSkillNotFound},
		{"missing path", "./nope", "", ErrSkillNotFound},
		{"folder without SKILL.md", "empty", "", ErrNoSkillFile},
		{"file", "./SKILL.md", "", ErrNotDir},
		{"empty ref", "", "", ErrSkillNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(root, tt.ref)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// A name that is no skill is explained for its reader: the operator is
// told the flags and folders of the CLI; a remote caller, whom the host's
// paths are not shown, is told how to list the skills instead.
func TestResolveNotFoundMessages(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, root, "hello", doc(strings.Replace(minimalFront, "name: demo", "name: hello", 1), ""), nil)
	writeSkill(t, root, "data-analysis", doc(strings.Replace(minimalFront, "name: demo", "name: data-analysis", 1), ""), nil)
	empty := t.TempDir()
	remote := func(string) string { return "the skills folder" }

	tests := []struct {
		name, root, ref string
		want            []string // the operator's message
		told            []string // a remote caller's
	}{
		{"typo gets a suggestion", root, "helo", []string{`did you mean "hello"?`}, []string{`did you mean "hello"?`}},
		{"case typo gets a suggestion", root, "Hello", []string{`did you mean "hello"?`}, []string{`did you mean "hello"?`}},
		{"unrelated name lists the skills", root, "report", []string{"it holds: data-analysis, hello", "--skills DIR"},
			[]string{"it holds: data-analysis, hello); pass one of those, or list the skills you may run with GET /v1/skills (MCP: the list_skills tool)"}},
		{"empty root says so", empty, "hello", []string{"holds no skills", "--skills DIR"},
			[]string{`no skill "hello" in the skills folder, which holds no skills; list the skills you may run with GET /v1/skills`}},
		{"missing root says so", filepath.Join(empty, "nope"), "hello", []string{"nope, which does not exist", "SANDBOXRUN_SKILLS", "./hello"},
			[]string{`no skill "hello" in the skills folder, which does not exist or is not a folder; the server's operator has to fix its skills folder`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(tt.root, tt.ref)
			require.ErrorIs(t, err, ErrSkillNotFound)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
			told := where.Render(err, remote)
			for _, w := range tt.told {
				require.Contains(t, told, w)
			}
			for _, cli := range []string{"--skills", "SANDBOXRUN_SKILLS", "path to the skill folder", tt.root} {
				require.NotContains(t, told, cli, "a remote caller is told no flag or folder of the host")
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"hello", "hello", 0}, {"helo", "hello", 1}, {"hlelo", "hello", 2}, {"", "abc", 3}, {"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		t.Run(tt.a+"/"+tt.b, func(t *testing.T) {
			require.Equal(t, tt.want, editDistance(tt.a, tt.b))
			require.Equal(t, tt.want, editDistance(tt.b, tt.a))
		})
	}
}
