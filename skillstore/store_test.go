package skillstore

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPutTarAndZipOneDigest(t *testing.T) {
	s, _ := openStore(t, Limits{})
	up, err := put(t, s, ownerA, FormatTar, tarOf(t, demo("", "hello", "")))
	require.NoError(t, err)
	require.True(t, up.Created)
	require.Equal(t, "hello", up.Name)
	require.Equal(t, "1", up.Version)
	require.Len(t, hexOf(up.Digest), 64)
	require.Equal(t, 3, up.Files) // SKILL.md, scripts/, scripts/hello.py

	again, err := put(t, s, ownerA, FormatTar, tarOf(t, demo("", "hello", "")))
	require.NoError(t, err)
	require.False(t, again.Created, "the same bytes are the stored version")
	require.Equal(t, up.Version, again.Version)

	// The same content as a zip, in a top folder: the same digest.
	z, err := put(t, s, ownerA, FormatZip, zipOf(t, demo("hello/", "hello", "")))
	require.NoError(t, err)
	require.False(t, z.Created)
	require.Equal(t, up.Digest, z.Digest)

	r, err := s.Resolve(ownerA, "hello")
	require.NoError(t, err)
	require.Equal(t, "hello", filepath.Base(r.Dir))
	d, err := Digest(r.Dir)
	require.NoError(t, err)
	require.Equal(t, up.Digest, d, "the stored folder sums to the upload's digest")
	fi, err := os.Stat(filepath.Join(r.Dir, "scripts/hello.py"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	fi, err = os.Stat(r.Dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "the sandbox user reads the skill folder")
}

func TestVersionsAndPins(t *testing.T) {
	s, _ := openStore(t, Limits{})
	v1, err := put(t, s, ownerA, FormatTar, tarOf(t, demo("", "hello", "version: 1.2.0\n")))
	require.NoError(t, err)
	require.Equal(t, "1.2.0", v1.Version, "the frontmatter's version, when new")
	// The same declared version with other content: the next integer.
	v2, err := put(t, s, ownerA, FormatTar, tarOf(t, append(demo("", "hello", "version: 1.2.0\n"), ent{name: "README", body: "x"})))
	require.NoError(t, err)
	require.Equal(t, "2", v2.Version)
	v3, err := put(t, s, ownerA, FormatTar, tarOf(t, append(demo("", "hello", ""), ent{name: "README", body: "y"})))
	require.NoError(t, err)
	require.Equal(t, "3", v3.Version)

	for _, tc := range []struct{ ref, want string }{
		{"hello", v3.Digest}, {"hello@1.2.0", v1.Digest}, {"hello@2", v2.Digest}, {"hello@" + v1.Digest, v1.Digest},
	} {
		r, err := s.Resolve(ownerA, tc.ref)
		require.NoError(t, err, tc.ref)
		require.Equal(t, tc.want, r.Digest, tc.ref)
	}
	_, err = s.Resolve(ownerA, "hello@9")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Resolve(ownerA, "hello@sha256:abc")
	require.ErrorIs(t, err, ErrBadRef)

	vs, err := s.Versions(ownerA, "hello")
	require.NoError(t, err)
	require.Equal(t, []string{"1.2.0", "2", "3"}, []string{vs[0].Version, vs[1].Version, vs[2].Version})

	require.NoError(t, s.DeleteVersion(ownerA, "hello", "2"))
	_, err = s.Resolve(ownerA, "hello@2")
	require.ErrorIs(t, err, ErrNotFound)
	v4, err := put(t, s, ownerA, FormatTar, tarOf(t, append(demo("", "hello", ""), ent{name: "README", body: "z"})))
	require.NoError(t, err)
	require.Equal(t, "4", v4.Version, "a deleted version's number is not given again")

	require.NoError(t, s.Delete(ownerA, "hello"))
	_, err = s.Resolve(ownerA, "hello")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, s.Delete(ownerA, "hello"), ErrNotFound)
}

func TestOwnersAreApart(t *testing.T) {
	s, _ := openStore(t, Limits{})
	_, err := put(t, s, ownerA, FormatTar, tarOf(t, demo("", "hello", "")))
	require.NoError(t, err)
	_, err = s.Resolve(ownerB, "hello")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, s.Delete(ownerB, "hello"), ErrNotFound)
	require.ErrorIs(t, s.DeleteVersion(ownerB, "hello", "1"), ErrNotFound)
	list, err := s.List(ownerB)
	require.NoError(t, err)
	require.Empty(t, list)
	list, err = s.List(ownerA)
	require.NoError(t, err)
	require.Len(t, list, 1)
	_, err = s.Put("not-a-digest", FormatTar, bytes.NewReader(nil))
	require.Error(t, err)
	_, err = s.Resolve("mcp", "hello")
	require.ErrorIs(t, err, ErrNotFound, "an owner that cannot upload has nothing")
}

func TestRefusalsKeepNothing(t *testing.T) {
	big := strings.Repeat("x", 4096)
	cases := []struct {
		name string
		ents []ent
		lim  Limits
		want string
		is   error
	}{
		{"dot dot", append(demo("", "hello", ""), ent{name: "../evil", body: "x"}), Limits{}, `".." element`, ErrBadArchive},
		{"absolute", append(demo("", "hello", ""), ent{name: "/etc/evil", body: "x"}), Limits{}, "absolute", ErrBadArchive},
		{"device", append(demo("", "hello", ""), ent{name: "dev", typ: tar.TypeChar}), Limits{}, "not a regular file", ErrBadArchive},
		{"setuid", append(demo("", "hello", ""), ent{name: "s", body: "x", mode: 0o4755}), Limits{}, "set-uid", ErrBadArchive},
		{"hard link", append(demo("", "hello", ""), ent{name: "h", typ: tar.TypeLink, link: "SKILL.md"}), Limits{}, "hard links", ErrBadArchive},
		{"link out", append(demo("", "hello", ""), ent{name: "l", typ: tar.TypeSymlink, link: "../x"}), Limits{}, "leaves the upload", ErrBadArchive},
		{"link absolute", append(demo("", "hello", ""), ent{name: "l", typ: tar.TypeSymlink, link: "/etc/passwd"}), Limits{}, "absolute", ErrBadArchive},
		{"link through a link", append(demo("", "hello", ""), ent{name: "a", typ: tar.TypeSymlink, link: "."}, ent{name: "b", typ: tar.TypeSymlink, link: "a/../.."}), Limits{}, "not clean", ErrBadArchive},
		{"link out of the top folder", append(demo("top/", "hello", ""), ent{name: "top/l", typ: tar.TypeSymlink, link: ".."}), Limits{}, "inside the skill folder", ErrBadArchive},
		{"write through a link", append(demo("", "hello", ""), ent{name: "d", typ: tar.TypeSymlink, link: "scripts"}, ent{name: "d/x", body: "x"}), Limits{}, "a file earlier", ErrBadArchive},
		{"twice", append(demo("", "hello", ""), ent{name: "SKILL.md", body: "x"}), Limits{}, "appears twice", ErrBadArchive},
		{"no SKILL.md", []ent{{name: "README", body: "x"}}, Limits{}, "no SKILL.md", ErrBadArchive},
		{"two top folders", append(demo("a/", "hello", ""), ent{name: "b/x", body: "x"}), Limits{}, "no SKILL.md", ErrBadArchive},
		{"invalid", []ent{{name: "SKILL.md", body: "---\nname: hello\n---\nbody\n"}}, Limits{}, "description", ErrInvalid},
		{"bad name", []ent{{name: "SKILL.md", body: skillMD("Bad_Name", "")}}, Limits{}, "name", ErrInvalid},
		{"too large", append(demo("", "hello", ""), ent{name: "big", body: big}), Limits{MaxUploadBytes: 3000}, LimitUploadBytes, ErrLimit},
		{"too many files", append(demo("", "hello", ""), ent{name: "x", body: "x"}), Limits{MaxFiles: 3}, LimitFiles, ErrLimit},
		{"reserved", demo("", "taken", ""), Limits{}, "operator skill", ErrNameTaken},
		{"a script linked out of scripts/", append(demo("", "hello", ""), ent{name: "notes.py", body: "x"}, ent{name: "scripts/l.py", typ: tar.TypeSymlink, link: "../notes.py"}),
			Limits{}, "it resolves to hello/notes.py", ErrInvalid},
	}
	for _, tc := range cases {
		for _, f := range []Format{FormatTar, FormatZip} {
			if f == FormatZip && (tc.name == "hard link" || tc.name == "absolute" || tc.name == "dot dot" || tc.name == "twice") {
				continue // zip.Writer refuses or cannot write these; the tar cases cover the guard
			}
			t.Run(tc.name+"/"+string(f), func(t *testing.T) {
				s, root := openStore(t, tc.lim, WithReserved(func(n string) bool { return n == "taken" }))
				data := tarOf(t, tc.ents)
				if f == FormatZip {
					data = zipOf(t, tc.ents)
				}
				_, err := put(t, s, ownerA, f, data)
				require.ErrorIs(t, err, tc.is)
				contains(t, err, tc.want)
				require.NotContains(t, err.Error(), root, "a refusal names no server path")
				requireNothingKept(t, root)
			})
		}
	}
}

func TestZipBombIsCountedUnpacked(t *testing.T) {
	s, root := openStore(t, Limits{MaxUploadBytes: 64 << 10})
	data := zipOf(t, append(demo("", "hello", ""), ent{name: "zeros", body: strings.Repeat("\x00", 1<<20)}))
	require.Less(t, len(data), 64<<10, "the zip itself is small")
	_, err := put(t, s, ownerA, FormatZip, data)
	require.ErrorIs(t, err, ErrLimit)
	requireNothingKept(t, root)
}

func TestInvalidReturnsFindings(t *testing.T) {
	s, _ := openStore(t, Limits{})
	_, err := put(t, s, ownerA, FormatTar, tarOf(t, []ent{{name: "SKILL.md", body: "---\nname: hello\n---\nbody\n"}}))
	var ie *InvalidError
	require.ErrorAs(t, err, &ie)
	require.NotEmpty(t, ie.Errors)
}

func TestPerOwnerCounts(t *testing.T) {
	s, root := openStore(t, Limits{MaxSkills: 1, MaxVersions: 2})
	_, err := put(t, s, ownerA, FormatTar, tarOf(t, demo("", "one", "")))
	require.NoError(t, err)
	_, err = put(t, s, ownerA, FormatTar, tarOf(t, demo("", "two", "")))
	require.ErrorIs(t, err, ErrLimit)
	contains(t, err, LimitSkills)
	_, err = put(t, s, ownerB, FormatTar, tarOf(t, demo("", "two", "")))
	require.NoError(t, err, "the bound is per owner")
	_, err = put(t, s, ownerA, FormatTar, tarOf(t, append(demo("", "one", ""), ent{name: "x", body: "1"})))
	require.NoError(t, err)
	_, err = put(t, s, ownerA, FormatTar, tarOf(t, append(demo("", "one", ""), ent{name: "x", body: "2"})))
	contains(t, err, LimitVersions)
	requireNothingKept(t, root, ownerA, ownerB)
}

func TestReopenKeepsVersionsAndClearsStaging(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	clock := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	s, err := Open(root, Limits{}, WithClock(clock))
	require.NoError(t, err)
	up, err := put(t, s, "", FormatTar, tarOf(t, demo("", "hello", "")))
	require.NoError(t, err)
	// What a killed server leaves: a half-written stage, its lock let go.
	require.NoError(t, os.MkdirAll(filepath.Join(s.stage, "up-1", "raw"), 0o700))
	crash(t, s)

	s2, err := Open(root, Limits{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s2.Close() })
	r, err := s2.Resolve("", "hello@1")
	require.NoError(t, err)
	require.Equal(t, up.Digest, r.Digest)
	require.Equal(t, clock(), r.CreatedAt)
	requireNothingKept(t, root, anonymous)
}

func TestLinksInsideAreKept(t *testing.T) {
	s, _ := openStore(t, Limits{})
	ents := append(demo("top/", "hello", ""),
		ent{name: "top/scripts/alias.py", typ: tar.TypeSymlink, link: "hello.py"},
		ent{name: "top/references/skill.md", typ: tar.TypeSymlink, link: "../SKILL.md"})
	up, err := put(t, s, ownerA, FormatTar, tarOf(t, ents))
	require.NoError(t, err)
	r, err := s.Resolve(ownerA, "hello@"+up.Digest)
	require.NoError(t, err)
	target, err := os.Readlink(filepath.Join(r.Dir, "scripts/alias.py"))
	require.NoError(t, err)
	require.Equal(t, "hello.py", target)
	z, err := put(t, s, ownerA, FormatZip, zipOf(t, ents))
	require.NoError(t, err)
	require.Equal(t, up.Digest, z.Digest, "links sum alike from tar and zip")
}
