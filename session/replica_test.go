package session

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidReplica(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"r-0", true},
		{"rel-sandboxrun-12", true},
		{"a", true},
		{"0", true},
		{strings.Repeat("a", 63), true},
		{"", false},
		{strings.Repeat("a", 64), false},
		{"-r", false},
		{"r-", false},
		{"R-0", false},
		{"r.0", false},
		{"r_0", false},
		{"r/0", false},
		{"r:0", false},
		{"r 0", false},
		{"ré", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidReplica(tc.name)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrBadReplica)
			require.Contains(t, err.Error(), "lowercase letters, digits and '-'")
		})
	}
}

func TestIDReplica(t *testing.T) {
	plain := newID()
	for _, tc := range []struct {
		name, id, replica string
		ok                bool
	}{
		{"single-server shape", plain, "", true},
		{"named", "r-0-" + plain, "r-0", true},
		{"statefulset name", "rel-sandboxrun-1-" + plain, "rel-sandboxrun-1", true},
		{"one-letter replica", "a-" + plain, "a", true},
		{"empty", "", "", false},
		{"short", plain[:25], "", false},
		{"upper case", strings.ToUpper(plain), "", false},
		{"no separator", "r0" + plain, "", false},
		{"empty replica", "-" + plain, "", false},
		{"replica ends with a dash", "r--" + plain, "", false},
		{"dot in replica", "a.b-" + plain, "", false},
		{"slash in replica", "../x-" + plain, "", false},
		{"random part one short", "r-0-" + plain[:25], "", false},
		{"random part one long", "r-0-" + plain + "a", "", false},
		{"non-canonical tail", "r-0-" + plain[:25] + "7", "", false},
		{"replica too long", strings.Repeat("a", 64) + "-" + plain, "", false},
		{"NUL", "r\x00-" + plain, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replica, ok := IDReplica(tc.id)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.replica, replica)
			require.Equal(t, tc.ok, validID(tc.id))
		})
	}
}

func TestNewIDNamesItsReplica(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewID("r-1")
		replica, ok := IDReplica(id)
		require.True(t, ok, id)
		require.Equal(t, "r-1", replica)
		require.False(t, seen[id])
		seen[id] = true
	}
	replica, ok := IDReplica(NewID(""))
	require.True(t, ok)
	require.Empty(t, replica)
}

// FuzzIDReplica: whatever IDReplica accepts is a plain file name of one of
// the two shapes, and NewID of the replica it names parses back to it.
func FuzzIDReplica(f *testing.F) {
	for _, s := range []string{newID(), NewID("r-0"), NewID("rel-sandboxrun-12"), "r-0-", "-", "..", "a/b-" + newID(), "a--" + newID()} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		replica, ok := IDReplica(id)
		if !ok {
			require.Empty(t, replica)
			return
		}
		require.Equal(t, filepath.Base(id), id)
		require.NotContains(t, id, ".")
		require.NotContains(t, id, "/")
		if replica == "" {
			require.Len(t, id, idLen)
			return
		}
		require.NoError(t, ValidReplica(replica))
		require.Equal(t, replica+"-", id[:len(id)-idLen])
		again, ok := IDReplica(NewID(replica))
		require.True(t, ok)
		require.Equal(t, replica, again)
	})
}

// TestStoreWithReplica: a replica's store names itself in new ids, still
// serves the sessions made before replicas (no owner part), never looks up
// another replica's id, and refuses a root that holds another replica's
// sessions.
func TestStoreWithReplica(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	single, err := Open(root, Limits{})
	require.NoError(t, err)
	old := create(t, single)
	require.NoError(t, single.Close())

	s, err := Open(root, Limits{}, WithReplica("r-0"))
	require.NoError(t, err)
	id := create(t, s)
	replica, ok := IDReplica(id)
	require.True(t, ok)
	require.Equal(t, "r-0", replica)
	put(t, s, id, "a.txt", "new")
	put(t, s, old, "a.txt", "old")

	// The same random part under another replica's name is not this
	// store's session, even though the random part matches one.
	foreign := "r-1-" + id[len("r-0-"):]
	_, err = s.Get(owner, foreign)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.PutFile(owner, foreign, "b.txt", strings.NewReader("x"))
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, s.Close())

	// Started as r-1 on r-0's root: refused, with the way out.
	_, err = Open(root, Limits{}, WithReplica("r-1"))
	require.ErrorContains(t, err, `holds sessions of replica "r-0", and this server is "r-1"`)
	// A single server holds whatever its root holds.
	single, err = Open(root, Limits{})
	require.NoError(t, err)
	_, err = single.Get(owner, id)
	require.NoError(t, err)
	require.NoError(t, single.Close())

	_, err = Open(filepath.Join(t.TempDir(), "x"), Limits{}, WithReplica("R_0"))
	require.ErrorIs(t, err, ErrBadReplica)
}
