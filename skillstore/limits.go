package skillstore

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
	if l.MaxUploadBytes <= 0 {
		l.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxSkills <= 0 {
		l.MaxSkills = DefaultMaxSkills
	}
	if l.MaxVersions <= 0 {
		l.MaxVersions = DefaultMaxVersions
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	return l
}
