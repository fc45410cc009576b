package fsmode

import "io/fs"

// Describe names the type of a file with mode m, with its article ("a
// folder", "a named pipe"), for messages of the form "%s is %s".
func Describe(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a file"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	default:
		return "a special file"
	}
}
