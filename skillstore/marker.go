package skillstore

import (
	"fmt"
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
	if err := os.WriteFile(p, []byte(markerText), 0o600); err != nil {
		return fmt.Errorf("skill store: marking the folder: %w", err)
	}
	return nil
}
