// Package session is the on-disk store of sandboxrun sessions: one workspace
// folder per session under an operator-configured root, with an owner, an
// idle TTL, a quota and snapshots, surviving restarts and crashes. Every file
// operation resolves paths inside the session folder without ever following
// a symlink, because a run may leave any link it likes in its workspace;
// the guards and the no-follow operations themselves are package fsroot's. It
// is the only code that writes into a workspace: a run's changes come back
// as a layer (sandbox.ChangeApplier) that this package applies, for a
// session and for an operator's host folder (Folder) alike.
package session
