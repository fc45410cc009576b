package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/internal/skillpack"
)

// The skill's files land in the folder init creates, with the archive's
// read-only modes, scripts executable, and the folder itself read-only.
func TestFetchSkill(t *testing.T) {
	src := filepath.Join(t.TempDir(), "hello")
	require.NoError(t, os.MkdirAll(filepath.Join(src, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "SKILL.md"), []byte("---\nname: hello\n---\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "scripts", "hi.sh"), []byte("echo hi\n"), 0o755))
	require.NoError(t, os.Symlink("scripts/hi.sh", filepath.Join(src, "hi")))
	a, err := skillpack.Pack("hello", src, skillpack.Limit{Max: 1 << 20})
	require.NoError(t, err)

	client, server := yamuxPair(t)
	go func() {
		s, err := server.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		var kind [1]byte
		if _, err := s.Read(kind[:]); err != nil || kind[0] != frame.StreamSkillIn {
			return
		}
		_, _ = s.Write(a.Tar)
	}()
	dir := filepath.Join(t.TempDir(), "skills", "hello")
	require.NoError(t, os.Mkdir(filepath.Dir(dir), 0o777))
	require.NoError(t, fetchSkill(&channel{sess: client}, &frame.SkillFiles{Dir: dir}))
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, _ error) error { return os.Chmod(p, 0o755) })
	})

	modes := map[string]fs.FileMode{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, p)
		modes[rel] = fi.Mode()
		return nil
	}))
	require.Equal(t, map[string]fs.FileMode{
		".":             fs.ModeDir | 0o555,
		"SKILL.md":      0o444,
		"scripts":       fs.ModeDir | 0o555,
		"scripts/hi.sh": 0o555,
		"hi":            fs.ModeSymlink | 0o777,
	}, modes)
	b, err := os.ReadFile(filepath.Join(dir, "hi"))
	require.NoError(t, err)
	require.Equal(t, "echo hi\n", string(b))
}

func TestFetchSkillRefusesBadJobs(t *testing.T) {
	require.ErrorIs(t, fetchSkill(nil, &frame.SkillFiles{Dir: "/skills/x"}), errBadJob)
	client, _ := yamuxPair(t)
	for _, d := range []string{"skills/x", "/skills/../x", "/"} {
		require.ErrorIs(t, fetchSkill(&channel{sess: client}, &frame.SkillFiles{Dir: d}), errBadJob, d)
	}
}
