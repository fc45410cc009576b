// Package cow gives a run a copy-on-write view of a workspace folder, so
// that what a run costs does not grow with the files it leaves alone.
//
// A View is an overlay mount. Its lower layer is the caller's folder itself,
// bound read-only through an id-mapped mount: files the store owns (uid and
// gid 0 on disk) appear as the sandbox user's, so a script may update them
// as it could a copy, and the folder's files are never written (overlayfs
// copies a file up before changing it). The upper layer lives on a tmpfs
// of the room the run may use, so writes past it fail with ENOSPC by
// construction and never reach the host's disk. Once the script has ended,
// the upper layer is the change list: WriteLayer turns it into an OCI
// layer (overlay whiteouts become OCI whiteouts, opaque folders opaque
// markers) for the workspace's owner to apply (sandbox.ChangeApplier).
//
// Mounting needs CAP_SYS_ADMIN in the host's mount namespace and a kernel
// and file system that support id-mapped mounts under overlayfs (Linux 5.19
// or later, ext4, xfs, btrfs, tmpfs). Supported says whether this process
// has both; backends fall back to copying the workspace when it does not.
package cow
