package sandboxrun

import (
	"github.com/sandboxrun/sandboxrun/session"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// What a caller's sessions and uploads are described by, and what their
// calls fail with: the stores' own types and errors, named here so that a
// front end needs this package only and no store is handed out.
type (
	SessionInfo  = session.Info
	FileInfo     = session.FileInfo
	FileEntry    = session.Entry
	Snapshot     = session.Snapshot
	Upload       = skillstore.Upload
	UploadFormat = skillstore.Format
	SkillVersion = skillstore.Meta
	// PathError is a session file path refused (it matches ErrBadPath).
	PathError = session.PathError
	// SessionLimitError and UploadLimitError name the policy limit a call
	// passed (their Limit); InvalidUploadError lists what makes an
	// uploaded skill invalid.
	SessionLimitError  = session.LimitError
	UploadLimitError   = skillstore.LimitError
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
	ErrBadPath          = session.ErrBadPath
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
