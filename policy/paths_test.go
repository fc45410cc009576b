package policy

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// skillFixture builds a skill folder "demo" with every kind of entry the path
// guard must tell apart, and returns the folder (unresolved) and its parent.
func skillFixture(t *testing.T) (skill, root string) {
	t.Helper()
	root = t.TempDir()
	skill = filepath.Join(root, "demo")
	scripts := filepath.Join(skill, "scripts")
	require.NoError(t, os.MkdirAll(filepath.Join(scripts, "sub"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(scripts, "dir"), 0o755))
	write := func(p string, mode os.FileMode) {
		require.NoError(t, os.WriteFile(p, []byte("print(1)\n"), 0o644))
		require.NoError(t, os.Chmod(p, mode))
	}
	write(filepath.Join(scripts, "x.py"), 0o755)
	write(filepath.Join(scripts, "sub", "y.sh"), 0o755)
	write(filepath.Join(scripts, "suid.py"), 0o755|os.ModeSetuid)
	write(filepath.Join(scripts, "sgid.py"), 0o755|os.ModeSetgid)
	write(filepath.Join(skill, "secret.py"), 0o644)
	write(filepath.Join(root, "outside.py"), 0o644)
	require.NoError(t, os.Symlink("x.py", filepath.Join(scripts, "link-in")))
	require.NoError(t, os.Symlink(filepath.Join(scripts, "x.py"), filepath.Join(scripts, "link-abs-in")))
	require.NoError(t, os.Symlink("../secret.py", filepath.Join(scripts, "link-out")))
	require.NoError(t, os.Symlink(filepath.Join(root, "outside.py"), filepath.Join(scripts, "link-abs-out")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(scripts, "link-etc")))
	require.NoError(t, os.Symlink("nope.py", filepath.Join(scripts, "dangling")))
	require.NoError(t, os.Symlink("dir", filepath.Join(scripts, "link-dir")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(scripts, "fifo"), 0o644))
	return skill, root
}

func TestResolveScript(t *testing.T) {
	skill, root := skillFixture(t)
	realSkill, err := filepath.EvalSymlinks(skill)
	require.NoError(t, err)
	hostX := filepath.Join(realSkill, "scripts", "x.py")

	tests := []struct {
		name    string
		ref     string
		wantRel string
	}{
		{"relative", "scripts/x.py", "scripts/x.py"},
		{"dot relative", "./scripts/x.py", "scripts/x.py"},
		{"bare file name", "x.py", "scripts/x.py"},
		{"baseDir", "{baseDir}/scripts/x.py", "scripts/x.py"},
		{"sandbox path", "/skills/demo/scripts/x.py", "scripts/x.py"},
		{"host absolute inside", filepath.Join(skill, "scripts", "x.py"), "scripts/x.py"},
		{"nested", "scripts/sub/y.sh", "scripts/sub/y.sh"},
		{"dotdot staying inside", "scripts/sub/../x.py", "scripts/x.py"},
		{"symlink inside", "scripts/link-in", "scripts/x.py"},
		{"absolute symlink inside", "scripts/link-abs-in", "scripts/x.py"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveScript(skill, "demo", tt.ref)
			require.NoError(t, err)
			require.Equal(t, tt.wantRel, got.Rel)
			require.Equal(t, "/skills/demo/"+tt.wantRel, got.SandboxPath)
			require.Equal(t, filepath.Join(realSkill, filepath.FromSlash(tt.wantRel)), got.HostPath)
		})
	}

	t.Run("symlinked skill folder", func(t *testing.T) {
		link := filepath.Join(root, "demo-link")
		require.NoError(t, os.Symlink(skill, link))
		got, err := ResolveScript(link, "demo", "scripts/x.py")
		require.NoError(t, err)
		require.Equal(t, hostX, got.HostPath)
	})
}

func TestResolveScriptRefused(t *testing.T) {
	skill, root := skillFixture(t)
	tests := []struct {
		name string
		ref  string
		want error
	}{
		{"traversal", "../outside.py", ErrOutsideScripts},
		{"traversal through scripts", "scripts/../../outside.py", ErrOutsideScripts},
		{"skill root file", "scripts/../secret.py", ErrOutsideScripts},
		{"skill root via baseDir", "{baseDir}/secret.py", ErrOutsideScripts},
		{"other folder", "sub/y.sh", ErrOutsideScripts},
		{"scripts folder itself", "scripts/", ErrOutsideScripts},
		{"absolute outside", "/etc/passwd", ErrOutsideScripts},
		{"absolute host outside", filepath.Join(root, "outside.py"), ErrOutsideScripts},
		{"other skill sandbox path", "/skills/other/scripts/x.py", ErrOutsideScripts},
		{"symlink escaping", "scripts/link-out", ErrOutsideScripts},
		{"absolute symlink escaping", "scripts/link-abs-out", ErrOutsideScripts},
		{"symlink to etc", "scripts/link-etc", ErrOutsideScripts},
		{"directory", "scripts/dir", ErrNotRegular},
		{"symlink to directory", "scripts/link-dir", ErrNotRegular},
		{"fifo", "scripts/fifo", ErrNotRegular},
		{"setuid", "scripts/suid.py", ErrSetID},
		{"setgid", "scripts/sgid.py", ErrSetID},
		{"missing", "scripts/missing.py", ErrNotFound},
		{"dangling symlink", "scripts/dangling", ErrNotFound},
		{"file as folder", "scripts/x.py/more", ErrNotFound},
		{"empty", "", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ResolveScript(skill, "demo", tt.ref)
			require.ErrorIs(t, err, tt.want)
			require.Contains(t, err.Error(), tt.ref, "the message names the path")
		})
	}
}

func TestResolveScriptFolders(t *testing.T) {
	t.Run("no scripts folder", func(t *testing.T) {
		skill := t.TempDir()
		_, err := ResolveScript(skill, "demo", "scripts/x.py")
		require.ErrorIs(t, err, ErrNotFound)
		require.Contains(t, err.Error(), "create it")
	})
	t.Run("scripts is a symlink", func(t *testing.T) {
		root := t.TempDir()
		skill := filepath.Join(root, "demo")
		elsewhere := filepath.Join(root, "elsewhere")
		require.NoError(t, os.MkdirAll(skill, 0o755))
		require.NoError(t, os.MkdirAll(elsewhere, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "x.py"), nil, 0o644))
		require.NoError(t, os.Symlink(elsewhere, filepath.Join(skill, "scripts")))
		_, err := ResolveScript(skill, "demo", "scripts/x.py")
		require.ErrorIs(t, err, ErrOutsideScripts)
		require.Contains(t, err.Error(), "real folder")
	})
	t.Run("scripts is a file", func(t *testing.T) {
		skill := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(skill, "scripts"), nil, 0o644))
		_, err := ResolveScript(skill, "demo", "scripts/x.py")
		require.ErrorIs(t, err, ErrNotFound)
	})
	t.Run("missing skill folder", func(t *testing.T) {
		_, err := ResolveScript(filepath.Join(t.TempDir(), "nope"), "demo", "scripts/x.py")
		require.Error(t, err)
	})
}

func TestResolveScriptBadSkillName(t *testing.T) {
	skill, _ := skillFixture(t)
	for _, name := range []string{"", ".", "..", "a/b", "../demo"} {
		t.Run(name, func(t *testing.T) {
			_, err := ResolveScript(skill, name, "scripts/x.py")
			require.Error(t, err)
			require.Contains(t, err.Error(), "skill name")
		})
	}
}

func TestSandboxDir(t *testing.T) {
	require.Equal(t, "/skills/data-analysis", SandboxDir("data-analysis"))
}

func TestTrimSkillDir(t *testing.T) {
	for _, tc := range []struct {
		ref, rel string
		in       bool
	}{
		{"{baseDir}/scripts/x.py", "scripts/x.py", true},
		{"/skills/demo/references/a.md", "references/a.md", true},
		{"{baseDir}", ".", true},
		{"/skills/demo", ".", true},
		{"/skills/demox/a", "/skills/demox/a", false},
		{"{baseDir}x/a", "{baseDir}x/a", false},
		{"scripts/x.py", "scripts/x.py", false},
		{"/etc/passwd", "/etc/passwd", false},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			rel, in := TrimSkillDir("demo", tc.ref)
			require.Equal(t, tc.rel, rel)
			require.Equal(t, tc.in, in)
		})
	}
}
