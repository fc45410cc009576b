// Package fsroot decides which file names are safe inside one root folder:
// the guard every caller path (CheckPath) and every archive member
// (CheckEntry, LinkLeaves, Tree) goes through before anything touches the
// disk, for a session's workspace and a skill upload alike; and it holds
// the file operations that never leave a root, done one element at a time
// on directory handles and refusing every symlink rather than following
// it. It links no store, so the skill store shares the session store's
// judgement without linking sessions.
package fsroot
