package egress

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// folderPrefix starts the name of every proxy's private folder.
const folderPrefix = "sandboxrun-egress-"

// ownerFile, in a proxy's folder, names the process that serves the proxy
// (WithOwner), so that a reaper can remove the folders of a process that
// was killed before it could clean up.
const ownerFile = "owner.json"

// WithOwner records labels naming the process that runs the proxy (pid,
// start time, host) in its folder. Without it, Folders reports the folder
// with no owner and a reaper leaves it alone.
func WithOwner(labels map[string]string) Option { return func(s *settings) { s.owner = labels } }

// Folder is a proxy's private folder found on disk.
type Folder struct {
	Path string
	// Owner holds the labels written by WithOwner; nil when none were.
	Owner map[string]string
}

// Folders lists the proxy folders in dir (os.TempDir() when empty), live
// or left behind. A folder whose owner file cannot be read is listed
// without an owner.
func Folders(dir string) ([]Folder, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	matches, err := filepath.Glob(filepath.Join(dir, folderPrefix+"*"))
	if err != nil {
		return nil, fmt.Errorf("egress proxy folders in %s: %w", dir, err)
	}
	var out []Folder
	for _, m := range matches {
		fi, err := os.Lstat(m)
		if err != nil || !fi.IsDir() {
			continue // gone meanwhile, or not one of ours
		}
		f := Folder{Path: m}
		if b, err := os.ReadFile(filepath.Join(m, ownerFile)); err == nil {
			_ = json.Unmarshal(b, &f.Owner)
		}
		out = append(out, f)
	}
	return out, nil
}

// writeOwner records the owner labels in the proxy's folder.
func writeOwner(dir string, labels map[string]string) error {
	if labels == nil {
		return nil
	}
	b, err := json.Marshal(labels)
	if err != nil {
		return fmt.Errorf("egress proxy: encode its owner: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), b, 0o600); err != nil {
		return fmt.Errorf("egress proxy: record its owner: %w", err)
	}
	return nil
}
