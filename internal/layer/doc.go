// Package layer is the one home of the change-layer format: what a run
// changed in a writable workspace, as an OCI image layer (a tar stream of
// new and changed folders, files and symlinks, a whiteout ".wh.NAME" for a
// deleted entry, ".wh..wh..opq" for a folder whose earlier content is
// gone). Writer writes one for every backend (sandbox-init, the
// copy-on-write view, the Docker copy fallback); Reader reads one for the
// applier, with every name checked to stay inside the workspace.
//
// It imports the standard library only, so that sandbox-init (a static
// binary copied into every runner image) links it at no cost.
package layer
