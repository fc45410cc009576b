package sandboxrun

import (
	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/session"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// The types of a caller's sessions and uploads, and of what their calls
// fail with, are the stores' own, named here so that a front end needs this
// package only and no store is handed out.
type (
	// SessionInfo describes a session.
	SessionInfo = session.Info
	// FileInfo describes a file a call wrote.
	FileInfo = session.FileInfo
	// FileEntry is one entry of a listing, or a file opened.
	FileEntry = session.Entry
	// Snapshot describes a session's snapshot.
	Snapshot = session.Snapshot
	// Upload describes an uploaded skill as stored.
	Upload = skillstore.Upload
	// UploadFormat is an upload's archive format (UploadTar, UploadZip).
	UploadFormat = skillstore.Format
	// SkillVersion is one version of an uploaded skill.
	SkillVersion = skillstore.Meta
	// PathError is a session file path refused (it matches ErrBadPath).
	PathError = fsroot.PathError
	// SessionLimitError names the policy limit a session call passed.
	SessionLimitError = session.LimitError
	// UploadLimitError names the policy limit an upload call passed.
	UploadLimitError = skillstore.LimitError
	// InvalidUploadError lists what makes an uploaded skill invalid.
	InvalidUploadError = skillstore.InvalidError
)

// A FileEntry's Type besides a regular file's.
const (
	FileTypeDir     = session.TypeDir
	FileTypeSymlink = session.TypeSymlink
)

// The archive formats an upload comes in.
const (
	UploadTar = skillstore.FormatTar
	UploadZip = skillstore.FormatZip
)

// Limits a front end answers apart (their LimitError's Limit).
const (
	LimitSessionsPerToken = session.LimitPerOwner
	LimitSessionTTL       = session.LimitMaxTTL
	LimitSessionDepth     = session.LimitMaxDepth
	LimitSnapshots        = session.LimitSnapshots
	LimitUploadBytes      = skillstore.LimitUploadBytes
	LimitUploadFiles      = skillstore.LimitFiles
)

// What session calls fail with, for a front end to classify by; another
// owner's session answers as a missing one.
var (
	ErrSessionNotFound  = session.ErrNotFound
	ErrFileNotFound     = session.ErrFileNotFound
	ErrSnapshotNotFound = session.ErrSnapshotNotFound
	ErrBadPath          = fsroot.ErrBadPath
	ErrBadTar           = session.ErrBadTar
	ErrBadTTL           = session.ErrBadTTL
	ErrNotFile          = session.ErrNotFile
	ErrSessionLimit     = session.ErrLimit
)

// What upload calls fail with; another owner's upload answers as a
// missing one.
var (
	ErrUploadNotFound = skillstore.ErrNotFound
	ErrBadArchive     = skillstore.ErrBadArchive
	ErrBadSkillRef    = skillstore.ErrBadRef
	ErrInvalidUpload  = skillstore.ErrInvalid
	ErrNameTaken      = skillstore.ErrNameTaken
)

// NewSessionID is a fresh id in the sessions' form, naming replica
// (Config.Replica; "" for none): <replica>-<26 random characters>.
func NewSessionID(replica string) string { return session.NewID(replica) }

// ReplicaOf is the replica an id of that form names; false when it names
// none.
func ReplicaOf(id string) (string, bool) { return session.IDReplica(id) }

// ValidReplica checks a replica name (a DNS label).
func ValidReplica(name string) error { return session.ValidReplica(name) }
