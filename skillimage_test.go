package sandboxrun_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/skill"
)

const fakeRunnerID = "sha256:9999999999999999999999999999999999999999999999999999999999999999"

// fakeImages answers lookups from a set of present references and records
// every lookup.
type fakeImages struct {
	present map[string]string
	asked   []string
}

func (f *fakeImages) lookup(_ context.Context, ref string) (string, error) {
	f.asked = append(f.asked, ref)
	if id, ok := f.present[ref]; ok {
		return id, nil
	}
	return "", fmt.Errorf("image %s: %w", ref, images.ErrNotFound)
}

func depsSkillForTest(t *testing.T) *skill.Skill {
	t.Helper()
	return tempSkill(t, "with-deps", []string{"metadata:", `  system_packages: "bc"`}, map[string]string{
		"scripts/a.py": "# /// script\n# dependencies = [\"tabulate\"]\n# ///\n",
	})
}

func TestImageFor(t *testing.T) {
	ctx := context.Background()
	runner := sandboxrun.RunnerImage()

	t.Run("a skill without packages runs in the runner, without asking Docker", func(t *testing.T) {
		f := &fakeImages{}
		sk := tempSkill(t, "plain", nil, map[string]string{"scripts/a.py": "print(1)\n"})
		ref, err := sandboxrun.ImageFor(ctx, sk, sandboxrun.BuildOptions{Lookup: f.lookup})
		require.NoError(t, err)
		require.Equal(t, runner, ref)
		require.Empty(t, f.asked)
	})

	sk := depsSkillForTest(t)
	opts, err := sandboxrun.SkillImageOptions(sk, sandboxrun.BuildOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"tabulate"}, opts.PythonPackages)
	require.Equal(t, []string{"bc"}, opts.SystemPackages)
	tag, err := images.SkillTag(opts, fakeRunnerID)
	require.NoError(t, err)

	t.Run("an existing skill image is used, whatever the package sources", func(t *testing.T) {
		f := &fakeImages{present: map[string]string{runner: fakeRunnerID, tag: "sha256:skill"}}
		ref, err := sandboxrun.ImageFor(ctx, sk, sandboxrun.BuildOptions{
			Lookup: f.lookup, NoBuild: true,
			Pip: images.PipConfig{IndexURL: "https://pypi.example.com/simple"},
		})
		require.NoError(t, err)
		require.Equal(t, tag, ref)
		require.Equal(t, []string{runner, tag}, f.asked)
	})

	t.Run("--no-build names the command that builds it", func(t *testing.T) {
		f := &fakeImages{present: map[string]string{runner: fakeRunnerID}}
		_, err := sandboxrun.ImageFor(ctx, sk, sandboxrun.BuildOptions{Lookup: f.lookup, NoBuild: true})
		require.ErrorIs(t, err, sandboxrun.ErrNeedsBuild)
		require.Contains(t, err.Error(), "sandboxrun build "+sk.Dir, "the hint names the folder, which works from any skills root")
		require.Contains(t, err.Error(), tag)
		told := where.Render(err, func(string) string { return "a file of the server" })
		require.NotContains(t, told, sk.Dir, "a remote caller is told no host folder")
		require.NotContains(t, told, "sandboxrun build", "nor the operator's command")
		require.Contains(t, told, "its operator has to build it")
	})

	t.Run("a missing runner says how to build it", func(t *testing.T) {
		f := &fakeImages{}
		_, err := sandboxrun.ImageFor(ctx, sk, sandboxrun.BuildOptions{Lookup: f.lookup})
		require.ErrorIs(t, err, images.ErrNotFound)
		require.Contains(t, err.Error(), "sandboxrun images build")
		told := where.Render(err, func(string) string { return "a file of the server" })
		require.NotContains(t, told, "sandboxrun images build", "the command is the operator's")
		require.Contains(t, told, "the server's operator has to build it")
	})

	t.Run("a malformed block is refused before any lookup", func(t *testing.T) {
		f := &fakeImages{}
		bad := tempSkill(t, "bad", nil, map[string]string{"scripts/a.py": "# /// script\n# dependencies = 1\n# ///\n"})
		_, err := sandboxrun.ImageFor(ctx, bad, sandboxrun.BuildOptions{Lookup: f.lookup})
		require.ErrorIs(t, err, sandboxrun.ErrRefused)
		require.ErrorIs(t, err, skill.ErrInlineMetadata)
		require.Empty(t, f.asked)
	})
}

func TestBuildSkillImageWithoutPackages(t *testing.T) {
	sk := tempSkill(t, "plain", nil, nil)
	_, err := sandboxrun.BuildSkillImage(context.Background(), sk, sandboxrun.BuildOptions{})
	require.ErrorIs(t, err, sandboxrun.ErrNoDependencies)
}
