package sandboxrun

import (
	"io"
	"time"

	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/fsroot"
	"github.com/sandboxrun/sandboxrun/session"
)

// CheckFilePath checks a session file path as the store will (its depth,
// no "..", no absolute path), so that a front end refuses it before it
// routes the request; the store checks it again.
func (s *Service) CheckFilePath(p string) error {
	depth := session.Limits{}.WithDefaults().MaxDepth
	if s.sessions != nil {
		depth = s.sessions.Limits().MaxDepth
	}
	_, err := fsroot.CheckPath(p, depth)
	return err
}

// The session and upload operations, each for the door's caller: its own
// sessions and uploads only (another owner's answer as missing ones), and
// every error told as the caller is told errors (a remote caller's name no
// folder of the host). A Service that keeps no sessions answers every
// session call with ErrNoSessions; one with uploads off, ErrUploadsOff.

// SessionsOn says why the caller's session calls would be refused (the
// Service keeps no sessions, matching ErrNoSessions); nil when they would
// not, so that a front end answers that before reading a request's body.
func (d *Door) SessionsOn() error {
	_, err := d.svc.sessionStore()
	return d.answer(nil, "", err)
}

// UploadsOn is SessionsOn for uploads (ErrUploadsOff).
func (d *Door) UploadsOn() error {
	_, err := d.svc.skillStore()
	return d.answer(nil, "", err)
}

// CreateSession makes a session, idle for at most ttl (0: the policy's).
func (d *Door) CreateSession(ttl time.Duration) (SessionInfo, error) {
	st, err := d.svc.sessionStore()
	if err != nil {
		return SessionInfo{}, d.answer(nil, "", err)
	}
	if err := d.storeMore(0); err != nil {
		return SessionInfo{}, d.answer(nil, "", err)
	}
	info, err := st.Create(d.c.Owner, ttl)
	d.auditOp(audit.Operation{Op: audit.OpSessionCreate, Session: info.ID}, err)
	return info, d.answer(nil, "", err)
}

// ForkSession makes a session holding a copy of the caller's session
// from (of its snapshot snap, when named).
func (d *Door) ForkSession(from, snap string, ttl time.Duration) (SessionInfo, error) {
	st, err := d.svc.sessionStore()
	if err != nil {
		return SessionInfo{}, d.answer(nil, "", err)
	}
	if err := d.storeMore(d.forkBytes(st, from, snap)); err != nil {
		return SessionInfo{}, d.answer(nil, "", err)
	}
	info, err := st.Fork(d.c.Owner, from, snap, ttl)
	d.auditOp(audit.Operation{Op: audit.OpSessionFork, Session: info.ID, From: from, Snapshot: snap}, err)
	return info, d.answer(nil, "", err)
}

// Sessions lists the caller's sessions.
func (d *Door) Sessions() ([]SessionInfo, error) {
	st, err := d.svc.sessionStore()
	if err != nil {
		return nil, d.answer(nil, "", err)
	}
	return st.List(d.c.Owner), nil
}

// Session describes one of the caller's sessions.
func (d *Door) Session(id string) (SessionInfo, error) {
	st, err := d.svc.sessionStore()
	if err != nil {
		return SessionInfo{}, d.answer(nil, "", err)
	}
	info, err := st.Get(d.c.Owner, id)
	return info, d.answer(nil, "", err)
}

// DeleteSession removes a session, cancelling a run in it.
func (d *Door) DeleteSession(id string) error {
	st, err := d.svc.sessionStore()
	if err != nil {
		return d.answer(nil, "", err)
	}
	err = st.Delete(d.c.Owner, id)
	d.auditOp(audit.Operation{Op: audit.OpSessionDelete, Session: id}, err)
	return d.answer(nil, "", err)
}

// PutFile writes r to the session's file p.
func (d *Door) PutFile(id, p string, r io.Reader) (FileInfo, error) {
	st, err := d.svc.sessionStore()
	if err != nil {
		return FileInfo{}, d.answer(nil, "", err)
	}
	if err := d.storeMore(0); err != nil {
		return FileInfo{}, d.answer(nil, "", err)
	}
	fi, err := st.PutFile(d.c.Owner, id, p, r)
	return fi, d.answer(nil, "", err)
}

// PutTar unpacks a tar into the session's folder.
func (d *Door) PutTar(id string, r io.Reader) ([]FileInfo, error) {
	st, err := d.svc.sessionStore()
	if err != nil {
		return nil, d.answer(nil, "", err)
	}
	if err := d.storeMore(0); err != nil {
		return nil, d.answer(nil, "", err)
	}
	fis, err := st.PutTar(d.c.Owner, id, r)
	return fis, d.answer(nil, "", err)
}

// OpenFile opens the session's file p for reading; close it.
func (d *Door) OpenFile(id, p string) (io.ReadCloser, FileEntry, error) {
	st, err := d.svc.sessionStore()
	if err != nil {
		return nil, FileEntry{}, d.answer(nil, "", err)
	}
	f, e, err := st.OpenFile(d.c.Owner, id, p)
	return f, e, d.answer(nil, "", err)
}

// DeleteFile removes the session's file p.
func (d *Door) DeleteFile(id, p string) error {
	st, err := d.svc.sessionStore()
	if err != nil {
		return d.answer(nil, "", err)
	}
	return d.answer(nil, "", st.DeleteFile(d.c.Owner, id, p))
}

// ListFiles lists the session's folder sub ("" for all of it).
func (d *Door) ListFiles(id, sub string) ([]FileEntry, error) {
	st, err := d.svc.sessionStore()
	if err != nil {
		return nil, d.answer(nil, "", err)
	}
	es, err := st.ListFiles(d.c.Owner, id, sub)
	return es, d.answer(nil, "", err)
}

// WriteTar writes the session's folder to w as a tar.
func (d *Door) WriteTar(id string, w io.Writer) error {
	st, err := d.svc.sessionStore()
	if err != nil {
		return d.answer(nil, "", err)
	}
	return d.answer(nil, "", st.WriteTar(d.c.Owner, id, w))
}

// Snapshot keeps the session's folder as it is now, under label.
func (d *Door) Snapshot(id, label string) (Snapshot, error) {
	st, err := d.svc.sessionStore()
	if err != nil {
		return Snapshot{}, d.answer(nil, "", err)
	}
	if err := d.storeMore(0); err != nil {
		return Snapshot{}, d.answer(nil, "", err)
	}
	snap, err := st.Snapshot(d.c.Owner, id, label)
	d.auditOp(audit.Operation{Op: audit.OpSnapshot, Session: id, Snapshot: snap.ID}, err)
	return snap, d.answer(nil, "", err)
}

// Snapshots lists the session's snapshots.
func (d *Door) Snapshots(id string) ([]Snapshot, error) {
	st, err := d.svc.sessionStore()
	if err != nil {
		return nil, d.answer(nil, "", err)
	}
	snaps, err := st.ListSnapshots(d.c.Owner, id)
	return snaps, d.answer(nil, "", err)
}

// DeleteSnapshot removes one of the session's snapshots.
func (d *Door) DeleteSnapshot(id, snap string) error {
	st, err := d.svc.sessionStore()
	if err != nil {
		return d.answer(nil, "", err)
	}
	err = st.DeleteSnapshot(d.c.Owner, id, snap)
	d.auditOp(audit.Operation{Op: audit.OpSnapshotDelete, Session: id, Snapshot: snap}, err)
	return d.answer(nil, "", err)
}

// Restore puts the session's folder back as its snapshot snap kept it.
func (d *Door) Restore(id, snap string) (SessionInfo, error) {
	st, err := d.svc.sessionStore()
	if err != nil {
		return SessionInfo{}, d.answer(nil, "", err)
	}
	if err := d.storeMore(0); err != nil {
		return SessionInfo{}, d.answer(nil, "", err)
	}
	info, err := st.Restore(d.c.Owner, id, snap)
	d.auditOp(audit.Operation{Op: audit.OpRestore, Session: id, Snapshot: snap}, err)
	return info, d.answer(nil, "", err)
}

// UploadSkill stores one skill from an archive in format, as the caller's.
// An invalid skill matches skillstore.ErrInvalid, and errors.As finds its
// *skillstore.InvalidError with the problems.
func (d *Door) UploadSkill(format UploadFormat, r io.Reader) (Upload, error) {
	st, err := d.svc.skillStore()
	if err != nil {
		return Upload{}, d.answer(nil, "", err)
	}
	if err := d.storeMore(0); err != nil {
		return Upload{}, d.answer(nil, "", err)
	}
	up, err := st.Put(d.c.Owner, format, r)
	d.auditOp(audit.Operation{Op: audit.OpSkillUpload, Skill: up.Name, Version: up.Version, SkillDigest: up.Digest}, err)
	return up, d.answer(nil, "", err)
}

// SkillVersions lists the versions of the caller's uploaded skill name.
func (d *Door) SkillVersions(name string) ([]SkillVersion, error) {
	st, err := d.svc.skillStore()
	if err != nil {
		return nil, d.answer(nil, "", err)
	}
	vs, err := st.Versions(d.c.Owner, name)
	return vs, d.answer(nil, "", err)
}

// DeleteSkill removes every version of the caller's uploaded skill name.
func (d *Door) DeleteSkill(name string) error {
	st, err := d.svc.skillStore()
	if err != nil {
		return d.answer(nil, "", err)
	}
	err = st.Delete(d.c.Owner, name)
	d.auditOp(audit.Operation{Op: audit.OpSkillDelete, Skill: name}, err)
	return d.answer(nil, "", err)
}

// DeleteSkillVersion removes one version of the caller's uploaded skill.
func (d *Door) DeleteSkillVersion(name, version string) error {
	st, err := d.svc.skillStore()
	if err != nil {
		return d.answer(nil, "", err)
	}
	err = st.DeleteVersion(d.c.Owner, name, version)
	d.auditOp(audit.Operation{Op: audit.OpSkillDelete, Skill: name, Version: version}, err)
	return d.answer(nil, "", err)
}
