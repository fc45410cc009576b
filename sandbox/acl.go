package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// POSIX ACLs in their Linux extended-attribute form: a little-endian
// version-2 header followed by 8-byte entries (tag, permissions, id), in
// the order the kernel requires: owner, named users by id, owning group,
// named groups by id, mask, other.
const (
	xattrACLAccess  = "system.posix_acl_access"
	xattrACLDefault = "system.posix_acl_default"
	// xattrCapability holds a file's capabilities; not an ACL, but read
	// alongside them to tell privileged files.
	xattrCapability = "security.capability"

	aclVersion   = 2
	aclHeaderLen = 4
	aclEntryLen  = 8

	tagUserObj  uint16 = 0x01
	tagUser     uint16 = 0x02
	tagGroupObj uint16 = 0x04
	tagGroup    uint16 = 0x08
	tagMask     uint16 = 0x10
	tagOther    uint16 = 0x20

	aclUndefinedID = ^uint32(0)
)

type aclEntry struct {
	tag  uint16
	perm uint16 // rwx bits: 4, 2, 1
	id   uint32 // uid or gid for named entries, else aclUndefinedID
}

type acl []aclEntry

var errBadACL = errors.New("malformed POSIX ACL")

func parseACL(b []byte) (acl, error) {
	if len(b) < aclHeaderLen || (len(b)-aclHeaderLen)%aclEntryLen != 0 {
		return nil, fmt.Errorf("%w: %d bytes", errBadACL, len(b))
	}
	if v := binary.LittleEndian.Uint32(b); v != aclVersion {
		return nil, fmt.Errorf("%w: version %d", errBadACL, v)
	}
	var a acl
	for p := b[aclHeaderLen:]; len(p) > 0; p = p[aclEntryLen:] {
		a = append(a, aclEntry{
			tag:  binary.LittleEndian.Uint16(p),
			perm: binary.LittleEndian.Uint16(p[2:]),
			id:   binary.LittleEndian.Uint32(p[4:]),
		})
	}
	return a, nil
}

func (a acl) encode() []byte {
	s := slices.Clone(a)
	slices.SortStableFunc(s, func(x, y aclEntry) int {
		if x.tag != y.tag {
			return int(x.tag) - int(y.tag)
		}
		switch {
		case x.id < y.id:
			return -1
		case x.id > y.id:
			return 1
		}
		return 0
	})
	b := make([]byte, aclHeaderLen, aclHeaderLen+aclEntryLen*len(s))
	binary.LittleEndian.PutUint32(b, aclVersion)
	for _, e := range s {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// aclFromMode is the minimal ACL equivalent to a file's permission bits.
func aclFromMode(mode uint32) acl {
	return acl{
		{tag: tagUserObj, perm: permBits(mode >> 6), id: aclUndefinedID},
		{tag: tagGroupObj, perm: permBits(mode >> 3), id: aclUndefinedID},
		{tag: tagOther, perm: permBits(mode), id: aclUndefinedID},
	}
}

// permBits is the rwx triple in the low bits of v.
func permBits(v uint32) uint16 { return uint16(v & 7) } //nolint:gosec // masked to 3 bits

func (a acl) find(tag uint16, id uint32) (aclEntry, bool) {
	for _, e := range a {
		if e.tag == tag && (id == aclUndefinedID || e.id == id) {
			return e, true
		}
	}
	return aclEntry{}, false
}

// namedExcept returns the entries for named users other than uid and for
// named groups.
func (a acl) namedExcept(uid uint32) []aclEntry {
	var out []aclEntry
	for _, e := range a {
		if (e.tag == tagUser && e.id != uid) || e.tag == tagGroup {
			out = append(out, e)
		}
	}
	return out
}

// withUser returns a copy with a named entry for uid and a mask wide enough
// for it. Widening the mask cannot widen the owning group's access: its own
// entry still applies.
func (a acl) withUser(uid uint32, perm uint16) acl {
	out := slices.DeleteFunc(slices.Clone(a), func(e aclEntry) bool {
		return (e.tag == tagUser && e.id == uid) || e.tag == tagMask
	})
	out = append(out, aclEntry{tag: tagUser, perm: perm, id: uid})
	return out.withMask()
}

// withoutUser returns a copy without uid's entry. With no named entries
// left it is the minimal ACL, with the owning group's effective permissions
// (its entry limited by the mask), so the kernel folds it back into plain
// permission bits.
func (a acl) withoutUser(uid uint32) acl {
	mask, hasMask := a.find(tagMask, aclUndefinedID)
	out := slices.DeleteFunc(slices.Clone(a), func(e aclEntry) bool {
		return (e.tag == tagUser && e.id == uid) || e.tag == tagMask
	})
	if out.hasNamed() {
		// Someone else's entries remain: their mask stays as it was.
		if hasMask {
			out = append(out, mask)
		}
		return out
	}
	if hasMask {
		for i := range out {
			if out[i].tag == tagGroupObj {
				out[i].perm &= mask.perm
			}
		}
	}
	return out
}

func (a acl) hasNamed() bool {
	for _, e := range a {
		if e.tag == tagUser || e.tag == tagGroup {
			return true
		}
	}
	return false
}

// withMask recomputes the mask as the union of the group class.
func (a acl) withMask() acl {
	var perm uint16
	named := false
	for _, e := range a {
		switch e.tag {
		case tagUser, tagGroup:
			named = true
			perm |= e.perm
		case tagGroupObj:
			perm |= e.perm
		}
	}
	out := slices.DeleteFunc(slices.Clone(a), func(e aclEntry) bool { return e.tag == tagMask })
	if named {
		out = append(out, aclEntry{tag: tagMask, perm: perm, id: aclUndefinedID})
	}
	return out
}

func (a acl) hasUser(uid uint32) bool {
	_, ok := a.find(tagUser, uid)
	return ok
}
