package skill

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func named(name string) string {
	return doc("name: "+name+"\ndescription: The "+name+" skill.\n", "body\n")
}

func discoveredNames(skills []*Skill) []string {
	names := make([]string, 0, len(skills))
	for _, s := range skills {
		names = append(names, s.Manifest.Name)
	}
	return names
}

// TestDiscoverLayouts builds one collection in every layout published
// collections use and checks that every skill is found, and nothing else.
func TestDiscoverLayouts(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, root, "plugins/docs/skills/pdf", named("pdf"), nil)
	writeSkill(t, root, "plugins/docs/skills/xlsx", named("xlsx"), nil)
	writeSkill(t, root, "plugins/dev/skills/git-helper", named("git-helper"), nil)
	writeSkill(t, root, ".claude/skills/reviewer", named("reviewer"), nil)
	writeSkill(t, root, "skills/data/analysis/csv-stats", named("csv-stats"), nil) // nested categories
	writeSkill(t, root, "top-level", named("top-level"), nil)
	// Not skills: a SKILL.md template inside a skill, hidden and vendored
	// folders, one deeper than the walk goes.
	writeSkill(t, root, "plugins/docs/skills/pdf/assets/template", named("template"), nil)
	writeSkill(t, root, ".git/skills/hidden", named("hidden"), nil)
	writeSkill(t, root, "node_modules/pkg/skill", named("vendored"), nil)
	writeSkill(t, root, "a/b/c/d/e/f/too-deep", named("too-deep"), nil)
	require.NoError(t, os.WriteFile(filepath.Join(root, "README.md"), []byte("# collection\n"), 0o644))

	skills, problems := Discover(root)
	require.Empty(t, problems)
	require.Equal(t, []string{"csv-stats", "git-helper", "pdf", "reviewer", "top-level", "xlsx"}, discoveredNames(skills))
	for _, s := range skills {
		require.True(t, filepath.IsAbs(s.Dir))
		require.Equal(t, s.Manifest.Name, filepath.Base(s.Dir))
	}

	t.Run("a repository that is one skill", func(t *testing.T) {
		one := writeSkill(t, t.TempDir(), "repo", named("repo"), map[string]string{"examples/other/SKILL.md": named("other")})
		skills, problems := Discover(one)
		require.Empty(t, problems)
		require.Equal(t, []string{"repo"}, discoveredNames(skills))
	})

	t.Run("validate walks the same layouts", func(t *testing.T) {
		reports, err := ValidatePath(root, false)
		require.NoError(t, err)
		require.Len(t, reports, 6)
	})
}

func TestDiscoverSymlinks(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := writeSkill(t, base, "outside/escaped", named("escaped"), nil)
	inside := writeSkill(t, root, "real/linked", named("linked"), nil)
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "escape")))
	require.NoError(t, os.Symlink(filepath.Dir(inside), filepath.Join(root, "alias")))
	// A loop must not be walked forever.
	require.NoError(t, os.Symlink(root, filepath.Join(root, "real", "loop")))

	skills, problems := Discover(root)
	require.Equal(t, []string{"linked"}, discoveredNames(skills), "read once, through the real folder or the alias")
	require.Len(t, problems, 1)
	require.ErrorContains(t, problems[0], "not followed: the symlink leads to "+outside)
}

func TestDiscoverBounds(t *testing.T) {
	old := walkDirLimit
	walkDirLimit = 50
	t.Cleanup(func() { walkDirLimit = old })
	root := t.TempDir()
	for i := range walkDirLimit + 5 {
		require.NoError(t, os.Mkdir(filepath.Join(root, fmt.Sprintf("d%05d", i)), 0o755))
	}
	writeSkill(t, root, "d00000", named("first"), nil)
	skills, problems := Discover(root)
	require.Equal(t, []string{"first"}, discoveredNames(skills), "what was found before the bound is kept")
	require.Len(t, problems, 1)
	require.ErrorIs(t, problems[0], ErrWalkBound)
}

func TestDiscoverRoots(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	first := writeSkill(t, a, "pdf", named("pdf"), nil)
	second := writeSkill(t, b, "plugins/x/skills/pdf", named("pdf"), nil)
	writeSkill(t, b, "only-b", named("only-b"), nil)
	// In one root, the folder of that name wins over another folder.
	writeSkill(t, a, "zz-copy", named("only-b"), nil)

	skills, problems := Discover(a, b)
	require.Equal(t, []string{"only-b", "pdf"}, discoveredNames(skills))
	require.Equal(t, first, skills[1].Dir, "the first root wins")
	require.Equal(t, filepath.Join(a, "zz-copy"), skills[0].Dir, "an earlier root wins over the folder of that name")
	require.Len(t, problems, 2)
	for _, p := range problems {
		var dup *DuplicateError
		require.True(t, errors.As(p, &dup), "%v", p)
	}
	require.ErrorContains(t, problems[1], second+`: skill name "pdf" is already used by `+first)

	loc, err := Locate([]string{a, b}, "pdf")
	require.NoError(t, err)
	require.Equal(t, first, loc.Dir)
	require.Len(t, loc.Warnings, 1)
	require.Contains(t, loc.Warnings[0], second)

	// The same root twice, or nested roots, reach a skill once.
	skills, problems = Discover(a, a, filepath.Join(a, "pdf"))
	require.Empty(t, problems)
	require.Len(t, skills, 2)
}

func TestLocateByFolderOrName(t *testing.T) {
	root := t.TempDir()
	byName := writeSkill(t, root, "plugins/p/skills/pdf-tools", named("pdf"), nil)
	odd := writeSkill(t, root, "skills/My Skill", named("my-skill"), nil)
	unnamed := writeSkill(t, root, "no-name", doc("description: d\n", ""), nil)
	writeSkill(t, root, "broken", doc("name: broken\ndescription: [\n", ""), nil)

	tests := []struct {
		ref, want string
		err       error
		warned    bool
	}{
		{ref: "pdf", want: byName},
		{ref: "pdf-tools", want: byName},
		{ref: "my-skill", want: odd},
		{ref: "My Skill", want: odd},
		{ref: "no-name", want: unnamed},
		{ref: "broken", err: ErrInvalidYAML},
		{ref: "nope", err: ErrSkillNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			loc, err := Locate([]string{root}, tt.ref)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, loc.Dir)
		})
	}
	s, err := Load(unnamed)
	require.NoError(t, err)
	require.Equal(t, "no-name", s.Manifest.Name, "a skill without a name runs under its folder's")
	require.NotEmpty(t, s.Warnings())
	require.Error(t, s.Strict())
}

func TestSplitRoots(t *testing.T) {
	require.Equal(t, []string{"a", "/b/c", "d"}, SplitRoots("a:/b/c::d: "))
	require.Nil(t, SplitRoots(""))
	require.Equal(t, []string{"skills"}, SplitRoots("skills"))
}

// TestNameWarnings checks the "don't drop, warn" rule: a skill whose name
// breaks a spec rule loads, says so, and Strict refuses it.
func TestNameWarnings(t *testing.T) {
	tests := []struct {
		folder, front, name, warning string
	}{
		{"pdf", "name: PDF\n", "PDF", "must be lowercase"},
		{"pdf-processing", "name: PDF Processing\n", "pdf-processing", `sandboxrun uses the folder name "pdf-processing"`},
		{"folder", "name: other\n", "other", `does not match the folder name "folder"`},
		{"x", "name: a_b\n", "a_b", `contains "_"`},
	}
	for _, tt := range tests {
		t.Run(tt.front, func(t *testing.T) {
			dir := writeSkill(t, t.TempDir(), tt.folder, doc(tt.front+"description: d\n", ""), nil)
			s, err := Load(dir)
			require.NoError(t, err)
			require.Equal(t, tt.name, s.Manifest.Name)
			require.Contains(t, strings.Join(s.Warnings(), "\n"), tt.warning)
			var me *ManifestError
			require.ErrorAs(t, s.Strict(), &me)
			require.Contains(t, strings.Join(me.Problems, "\n"), tt.warning)
		})
	}
	t.Run("neither name nor folder usable", func(t *testing.T) {
		dir := writeSkill(t, t.TempDir(), "my skill", doc("name: my skill\ndescription: d\n", ""), nil)
		_, err := Load(dir)
		require.ErrorIs(t, err, ErrInvalidManifest)
		require.ErrorContains(t, err, `neither `+"`name`"+` "my skill" nor the folder name "my skill"`)
	})
	t.Run("a conforming skill has no warnings", func(t *testing.T) {
		dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, ""), nil)
		s, err := Load(dir)
		require.NoError(t, err)
		require.Empty(t, s.Warnings())
		require.NoError(t, s.Strict())
	})
}
