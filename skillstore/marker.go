package skillstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandboxrun/sandboxrun/skill"
)

// markerText is what the store's marker file says to a person who finds it.
const markerText = "This folder is a sandboxrun store of uploaded skills: skill discovery does not search it.\n" +
	"Keep it outside the operator's skills folders (skill_uploads.store in the policy).\n"

// writeMarker marks root as an upload store (skill.UploadStoreMarker), so
// that operator skill discovery never searches it.
func writeMarker(root string) error {
	p := filepath.Join(root, skill.UploadStoreMarker)
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	// O_EXCL: another replica opening the same folder may be writing it.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err == nil {
		_, err = f.WriteString(markerText)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return fmt.Errorf("skill store: marking the folder: %w", err)
	}
	return nil
}
