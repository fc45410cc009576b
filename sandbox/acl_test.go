package sandbox

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestACLCodecRoundTrip(t *testing.T) {
	a := acl{
		{tag: tagOther, perm: 4, id: aclUndefinedID},
		{tag: tagUser, perm: 7, id: 2000},
		{tag: tagUserObj, perm: 6, id: aclUndefinedID},
		{tag: tagUser, perm: 5, id: 1000},
		{tag: tagMask, perm: 7, id: aclUndefinedID},
		{tag: tagGroupObj, perm: 4, id: aclUndefinedID},
	}
	b := a.encode()
	require.Len(t, b, aclHeaderLen+len(a)*aclEntryLen)
	require.Equal(t, []byte{2, 0, 0, 0}, b[:4], "version 2, little endian")
	got, err := parseACL(b)
	require.NoError(t, err)
	require.Equal(t, acl{
		{tag: tagUserObj, perm: 6, id: aclUndefinedID},
		{tag: tagUser, perm: 5, id: 1000},
		{tag: tagUser, perm: 7, id: 2000},
		{tag: tagGroupObj, perm: 4, id: aclUndefinedID},
		{tag: tagMask, perm: 7, id: aclUndefinedID},
		{tag: tagOther, perm: 4, id: aclUndefinedID},
	}, got, "entries come back in the order the kernel requires")
}

func TestParseACLRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, {2, 0, 0}, {1, 0, 0, 0}, {2, 0, 0, 0, 1, 0}} {
		_, err := parseACL(b)
		require.ErrorIs(t, err, errBadACL)
	}
}

func TestACLGrantAndRevoke(t *testing.T) {
	tests := []struct {
		name      string
		mode      uint32
		perm      uint16
		wantMask  uint16
		wantGroup uint16 // group bits after revoking
	}{
		{"file 0644", 0o644, 6, 6, 4},
		{"dir 0755", 0o755, 7, 7, 5},
		{"file 0600", 0o600, 6, 6, 0},
		{"dir 0750", 0o750, 7, 7, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := aclFromMode(tt.mode)
			g := base.withUser(SandboxUID, tt.perm)
			e, ok := g.find(tagUser, SandboxUID)
			require.True(t, ok)
			require.Equal(t, tt.perm, e.perm)
			m, ok := g.find(tagMask, aclUndefinedID)
			require.True(t, ok)
			require.Equal(t, tt.wantMask, m.perm)
			grp, _ := g.find(tagGroupObj, aclUndefinedID)
			require.Equal(t, uint16(tt.mode>>3)&7, grp.perm, "the owning group keeps its own permissions")

			r := g.withoutUser(SandboxUID)
			require.False(t, r.hasNamed())
			_, hasMask := r.find(tagMask, aclUndefinedID)
			require.False(t, hasMask, "a minimal ACL folds back into the mode")
			grp, _ = r.find(tagGroupObj, aclUndefinedID)
			require.Equal(t, tt.wantGroup, grp.perm)
			require.Equal(t, base, r)
		})
	}
}

func TestACLRevokeUsesEffectiveGroupPermissions(t *testing.T) {
	// What a file created under our default ACL inherits: the owning
	// group's entry is not limited by the create mode, the mask is.
	inherited := acl{
		{tag: tagUserObj, perm: 6, id: aclUndefinedID},
		{tag: tagUser, perm: 7, id: SandboxUID},
		{tag: tagGroupObj, perm: 5, id: aclUndefinedID},
		{tag: tagMask, perm: 6, id: aclUndefinedID},
		{tag: tagOther, perm: 4, id: aclUndefinedID},
	}
	grp, _ := inherited.withoutUser(SandboxUID).find(tagGroupObj, aclUndefinedID)
	require.Equal(t, uint16(4), grp.perm, "r-x limited by mask rw- is r--: no stray execute bit")
}

func TestACLRevokeKeepsOtherEntries(t *testing.T) {
	a := acl{
		{tag: tagUserObj, perm: 6, id: aclUndefinedID},
		{tag: tagUser, perm: 6, id: SandboxUID},
		{tag: tagGroupObj, perm: 4, id: aclUndefinedID},
		{tag: tagGroup, perm: 6, id: 3000},
		{tag: tagMask, perm: 4, id: aclUndefinedID},
		{tag: tagOther, perm: 0, id: aclUndefinedID},
	}
	r := a.withoutUser(SandboxUID)
	require.False(t, r.hasUser(SandboxUID))
	require.True(t, r.hasNamed())
	m, ok := r.find(tagMask, aclUndefinedID)
	require.True(t, ok)
	require.Equal(t, uint16(4), m.perm, "someone else's mask is left as it was")
	require.Len(t, a.namedExcept(SandboxUID), 1)
}
