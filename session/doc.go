// Package session is the on-disk store of sandboxrun sessions: one workspace
// folder per session under an operator-configured root, with an owner, an
// idle TTL and a quota, surviving restarts and crashes. Every file operation
// resolves paths inside the session folder without ever following a
// symlink, because a run may leave any link it likes in its workspace.
package session
