// Package fsmode names a file's type in the words sandboxrun's error
// messages use, so that the policy's script checks and the session's file
// operations describe the same kind of file the same way.
package fsmode
