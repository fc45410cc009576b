package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// TestReadTreeRecentUntouchedFileIsNoChange: a file put in the workspace
// just before the run (too recent for the quick check) comes back with the
// same bytes; the hand-back rewrites it but does not report it, so a host is
// not told to fetch an input it just uploaded. A recent file whose bytes or
// mode did change is still reported.
func TestReadTreeRecentUntouchedFileIsNoChange(t *testing.T) {
	tests := []struct {
		name       string
		host, back string
		hostMode   os.FileMode
		want       []sandbox.FileChange
	}{
		{"same bytes", "a,b\n", "a,b\n", 0o644, []sandbox.FileChange{}},
		{"same size, other bytes", "a,b\n", "c,d\n", 0o644, []sandbox.FileChange{
			{Path: "f", Change: sandbox.FileModified, Size: 4, SHA256: sha256Hex("c,d\n")},
		}},
		{"same bytes, other mode", "a,b\n", "a,b\n", 0o600, []sandbox.FileChange{
			{Path: "f", Change: sandbox.FileModified, Size: 4, SHA256: sha256Hex("a,b\n")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			p := filepath.Join(root, "f")
			require.NoError(t, os.WriteFile(p, []byte(tt.host), tt.hostMode))
			require.NoError(t, os.Chmod(p, tt.hostMode))
			changes, err := readTree(tarOf(t, entry{name: "f", body: tt.back}), root, map[string]bool{"f": true}, time.Now())
			require.NoError(t, err)
			require.Equal(t, tt.want, changes)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.Equal(t, tt.back, string(b))
		})
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
