package audit

import "time"

// What an Operation record names: a call that changed what a caller keeps
// (its sessions, their snapshots, its uploaded skills) rather than ran
// anything.
const (
	OpSessionCreate  = "session.create"
	OpSessionFork    = "session.fork"
	OpSessionDelete  = "session.delete"
	OpSnapshot       = "session.snapshot"
	OpSnapshotDelete = "session.snapshot.delete"
	OpRestore        = "session.restore"
	OpSkillUpload    = "skill.upload"
	OpSkillDelete    = "skill.delete"
)

// Operation is one line of the audit log for a session or upload call:
// who (the caller's owner: its token's digest, "" for the operator at the
// host), what, on which session, snapshot or skill, and whether it
// failed. Like a Record it never holds content: no file, no archive.
type Operation struct {
	Time  time.Time `json:"time"`
	Op    string    `json:"op"`
	Owner string    `json:"owner"`
	// Tenant is the caller's token label, as on run records.
	Tenant string `json:"tenant,omitempty"`
	// Session is the session acted on; for a fork, the new one, and From
	// the one it copied (of its snapshot Snapshot, when named).
	Session  string `json:"session,omitempty"`
	From     string `json:"from,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`
	// Skill, Version and SkillDigest name an uploaded skill (Version
	// empty: every version of it).
	Skill       string `json:"skill,omitempty"`
	Version     string `json:"version,omitempty"`
	SkillDigest string `json:"skill_digest,omitempty"`
	// Error says why the call failed, when it did: it changed nothing.
	Error string `json:"error,omitempty"`
}

// AppendOperation writes op as one line, stamped now when its Time is
// zero.
func (l *Log) AppendOperation(op Operation) error {
	if op.Time.IsZero() {
		op.Time = time.Now().UTC()
	}
	return l.write(op)
}
