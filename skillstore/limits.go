package skillstore

import "github.com/sandboxrun/sandboxrun/internal/limit"

// Defaults of the upload limits (policy skill_uploads).
const (
	DefaultMaxUploadBytes = 30 << 20
	DefaultMaxFiles       = 1000
	DefaultMaxSkills      = 32
	DefaultMaxVersions    = 16
	DefaultMaxDepth       = 16
)

// Limits bound what one owner may upload. Zero fields take the defaults.
type Limits struct {
	// MaxUploadBytes bounds an upload's archive, and also the bytes its
	// files unpack to (a zip may compress far better than that).
	MaxUploadBytes int64
	// MaxFiles bounds the files, folders and links of one skill.
	MaxFiles int
	// MaxSkills bounds the skill names one owner keeps.
	MaxSkills int
	// MaxVersions bounds the versions one owner keeps of one skill.
	MaxVersions int
	// MaxDepth bounds how deep a path in the skill goes.
	MaxDepth int
}

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	l.MaxUploadBytes = limit.Or(l.MaxUploadBytes, DefaultMaxUploadBytes)
	l.MaxFiles = limit.Or(l.MaxFiles, DefaultMaxFiles)
	l.MaxSkills = limit.Or(l.MaxSkills, DefaultMaxSkills)
	l.MaxVersions = limit.Or(l.MaxVersions, DefaultMaxVersions)
	l.MaxDepth = limit.Or(l.MaxDepth, DefaultMaxDepth)
	return l
}
