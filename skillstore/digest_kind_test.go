package skillstore

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A skill folder holding what is no file, folder or link has no digest,
// and the refusal says what the thing is in words, by its path in the
// skill, with the fix.
func TestDigestNamesTheKindOfFile(t *testing.T) {
	tests := []struct {
		name string
		make func(path string) error
		kind string
	}{
		{"a named pipe", func(p string) error { return unix.Mkfifo(p, 0o600) }, "a named pipe"},
		{"a socket", func(p string) error {
			l, err := net.Listen("unix", p)
			if err == nil {
				t.Cleanup(func() { _ = l.Close() })
			}
			return err
		}, "a socket"},
		{"a character device", func(p string) error {
			// The null device's numbers (1, 3): mknod needs CAP_MKNOD.
			return unix.Mknod(p, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3)))
		}, "a character device"},
		{"a block device", func(p string) error {
			return unix.Mknod(p, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 0)))
		}, "a block device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A short folder: a socket's path is bounded (108 bytes).
			dir, err := os.MkdirTemp("", "sk")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: x\n---\n"), 0o600))
			require.NoError(t, os.Mkdir(filepath.Join(dir, "scripts"), 0o700))
			device := strings.HasSuffix(tt.kind, "device")
			if err := tt.make(filepath.Join(dir, "scripts", "f.py")); err != nil {
				if device && errors.Is(err, os.ErrPermission) {
					t.Skipf("this process may not make %s (mknod needs CAP_MKNOD): %v", tt.kind, err)
				}
				require.NoError(t, err)
			}
			_, err = Digest(dir)
			require.EqualError(t, err, "digest of "+dir+": scripts/f.py is "+tt.kind+", not a file, folder or link: a skill holds only those, so remove it")
		})
	}
}
