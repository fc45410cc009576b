package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestReadMounts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mountinfo")
	require.NoError(t, os.WriteFile(p, []byte(
		"22 1 0:21 / / ro,relatime - overlay overlay rw\n"+
			"23 22 0:22 / /skills rw,nosuid - tmpfs tmpfs rw\n"+
			"24 22 0:23 / /work\\040space rw - tmpfs tmpfs rw\n"+
			"25 22 0:24 / /etc/hosts ro - ext4 /dev/vda rw\n"), 0o644))
	got, err := readMounts(p)
	require.NoError(t, err)
	require.Equal(t, []mount{{"/", false}, {"/skills", true}, {"/work space", true}, {"/etc/hosts", false}}, got)
}

// No writable skills volume, no domain: children start as before.
func TestGuardOnlyForAWritableSkillsVolume(t *testing.T) {
	g := newGuard([]mount{{"/", false}, {"/skills/hello", false}, {"/tmp", true}}, "/skills")
	require.False(t, g.needed)
}

// A child started in the guard's domain cannot write, remove or add to
// the skill's files, even after making them writable by mode, and writes
// beneath the other writable mounts as before.
func TestGuardKeepsTheSkillReadOnly(t *testing.T) {
	dir := t.TempDir()
	skills, tmp := filepath.Join(dir, "skills"), filepath.Join(dir, "tmp")
	require.NoError(t, os.MkdirAll(filepath.Join(skills, "hello"), 0o755))
	require.NoError(t, os.Mkdir(tmp, 0o755))
	script := filepath.Join(skills, "hello", "run.sh")
	require.NoError(t, os.WriteFile(script, []byte("echo hi\n"), 0o444))

	g := newGuard([]mount{{"/", false}, {skills, true}, {tmp, true}}, skills)
	require.True(t, g.needed)
	require.GreaterOrEqual(t, g.fd, 0, "this kernel offers Landlock: %s", g.why)
	sh := `chmod 0666 "$1"; echo changed > "$1"; rm -f "$1"; echo new > "${1%/*}/new"; echo ok > "$2/out"`
	pid, err := forkExecIn(g, "/bin/sh", []string{"sh", "-c", sh, "sh", script, tmp}, &syscall.ProcAttr{Env: []string{"PATH=/usr/bin:/bin"}})
	require.NoError(t, err)
	var ws unix.WaitStatus
	_, err = unix.Wait4(pid, &ws, 0, nil)
	require.NoError(t, err)

	b, err := os.ReadFile(script)
	require.NoError(t, err, "not removed")
	require.Equal(t, "echo hi\n", string(b), "not written")
	require.NoFileExists(t, filepath.Join(skills, "hello", "new"))
	b, err = os.ReadFile(filepath.Join(tmp, "out"))
	require.NoError(t, err)
	require.Equal(t, "ok\n", string(b))

	// Init itself is not in the domain.
	require.NoError(t, os.WriteFile(filepath.Join(skills, "hello", "by-init"), nil, 0o644))
}
