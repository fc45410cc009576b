// Package skillpack packs an operator's skill folder into the archive that
// a sandbox without shared storage receives over its side channel (the
// Kubernetes backend with kubernetes.skills: send), and keeps packed
// archives by the digest of their content, so repeated runs of a skill do
// not read and pack its folder again.
//
// An archive holds folders, regular files and symbolic links only, all
// read-only: folders 0555, files 0555 when the folder's file has any
// execute bit, else 0444 (set-id bits are dropped), owner 0 and time zero,
// so one content packs to the same bytes wherever its folder is. A link
// must be relative, must not climb out of the folder as written, and must
// resolve (on this host, links followed) to a path inside the folder;
// anything else (a link leaving the folder, a fifo, a socket, a device) is
// refused, naming the entry. The size that counts against the cap is what
// the skill takes in the sandbox's tmpfs: each file rounded up to whole
// pages, plus a page per folder and link.
package skillpack
