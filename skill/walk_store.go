package skill

import (
	"os"
	"path/filepath"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// UploadStoreMarker is the file a store of uploaded skills (skillstore)
// keeps in its root folder. Discovery never looks for skills in a folder
// that holds it, nor below: an upload is no operator skill, whatever root
// the store happens to lie under. (A server refuses to start with its store
// under a skills root; this keeps a store copied or moved there out too.)
const UploadStoreMarker = ".sandboxrun-upload-store"

// isUploadStore reports whether dir is the root of an upload store.
func isUploadStore(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, UploadStoreMarker))
	return err == nil
}

// uploadStoreNote tells why a folder under a skills root was not searched.
func uploadStoreNote(dir string) error {
	return where.Errorf("%s: not searched for skills: it is a store of uploaded skills (it holds %s); keep it outside the skills roots", where.Path(dir), UploadStoreMarker)
}
