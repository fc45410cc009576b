// Package skillstore keeps the skills callers upload over the API: each
// upload (a tar or zip holding one skill) is checked with the guards of
// session uploads, validated like `sandboxrun validate`, and stored
// immutably under its digest, one namespace per owner (a bearer token's
// digest). Versions are never changed in place, so a run that pins one
// always gets the same bytes; everything is written to a staging folder,
// fsynced and renamed in, so an upload survives a crash whole or not at
// all, and a refusal leaves nothing. The replicas of a server may share
// one store on a volume they all mount: nothing is kept in memory between
// calls, and the steps that must not interleave take file locks
// (shared.go).
//
// # The digest of a skill
//
// A skill's digest is "sha256:" and the hex SHA-256 of its canonical
// listing: one record per file, folder and symbolic link below the skill
// folder (the folder itself excluded), in byte order of their slash paths,
// each record
//
//	KIND ' ' MODE ' ' SUM ' ' PATH NUL
//
// where KIND is 'd' (folder), 'f' (regular file) or 'l' (symbolic link);
// MODE is "755" for a file with any execute bit, else "644" (files are
// stored with exactly that mode), "755" for a folder and "777" for a link;
// SUM is the hex SHA-256 of a file's bytes or a link's target text, "-"
// for a folder. Names, owners, times and the archive's format do not
// count: the same content uploaded as tar or zip has one digest, and an
// operator's skill folder (Digest) is summed by the same rule.
package skillstore
