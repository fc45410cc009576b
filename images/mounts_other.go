//go:build !linux

package images

import "os"

// removeTree deletes a temporary directory. Bootstrapping (the only thing
// that mounts inside one) needs Linux, so there is nothing to unmount here.
func removeTree(dir string) error { return os.RemoveAll(dir) }
