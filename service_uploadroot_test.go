package sandboxrun_test

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skill"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

// skillTarOf is a tar of one skill's files.
func skillTarOf(t *testing.T, files map[string]string) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return &buf
}

func writeOperatorSkill(t *testing.T, root, name string) {
	t.Helper()
	dir := filepath.Join(root, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: The operator's. Use it in tests.\n---\nbody\n"), 0o644))
}

func uploadsPolicy(t *testing.T, store string) *policy.Operator {
	t.Helper()
	y := "skill_uploads:\n  allow: tokens\n"
	if store != "" {
		y += "  store: " + store + "\n"
	}
	pol, err := policy.ParsePolicy("p.yaml", []byte(y))
	require.NoError(t, err)
	return pol
}

// An upload store that is, holds or lies inside a skills root or the
// sessions root is refused at start, naming both folders and the key to
// set, links resolved; nothing is created there.
func TestUploadStoreMustStayOutOfSkillsAndSessions(t *testing.T) {
	d := t.TempDir()
	skills, sessions := filepath.Join(d, "skills"), filepath.Join(d, "sessions")
	writeOperatorSkill(t, skills, "hello")
	require.NoError(t, os.MkdirAll(sessions, 0o755))
	link := filepath.Join(t.TempDir(), "to-skills")
	require.NoError(t, os.Symlink(skills, link))
	linkToD := filepath.Join(t.TempDir(), "to-d")
	require.NoError(t, os.Symlink(d, linkToD))

	tests := []struct {
		name            string
		store           string // "" keeps the default
		roots           []string
		sessions        string
		other, relation string
	}{
		{name: "is the skills root", store: skills, other: skills, relation: "is the skills root"},
		{name: "inside the skills root", store: filepath.Join(skills, "uploads"), other: skills, relation: "lies inside the skills root"},
		{name: "inside, not made yet", store: filepath.Join(skills, "a", "b"), other: skills, relation: "lies inside the skills root"},
		{name: "holds the skills root", store: d, other: skills, relation: "holds the skills root"},
		{name: "is the sessions root", store: sessions, sessions: sessions, other: sessions, relation: "is the sessions root"},
		{name: "inside the sessions root", store: filepath.Join(sessions, "up"), sessions: sessions, other: sessions, relation: "lies inside the sessions root"},
		{name: "holds the sessions root", store: filepath.Join(d, "x"), roots: []string{"skills"}, sessions: filepath.Join(d, "x", "sessions"), other: filepath.Join(d, "x", "sessions"), relation: "holds the sessions root"},
		{name: "inside the skills root through a link", store: filepath.Join(link, "uploads"), other: skills, relation: "lies inside the skills root"},
		{name: "a skills root given through a link", store: filepath.Join(skills, "up"), roots: []string{link}, other: link, relation: "lies inside the skills root"},
		{name: "a link to the parent, not made yet", store: filepath.Join(linkToD, "skills", "new"), other: skills, relation: "lies inside the skills root"},
		{name: "the default store, inside the skills root", roots: []string{d}, sessions: sessions, other: d, relation: "lies inside the skills root"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			roots := tc.roots
			if roots == nil {
				roots = []string{skills}
			}
			_, err := sandboxrun.New(sandboxrun.Config{SkillRoots: roots, SessionsRoot: tc.sessions, Policy: uploadsPolicy(t, tc.store), Runner: &fakeEngine{}})
			require.Error(t, err)
			msg := err.Error()
			require.Contains(t, msg, tc.relation+" "+tc.other)
			require.Contains(t, msg, "set skill_uploads.store")
			if tc.store == "" {
				require.Contains(t, msg, "the default upload store (uploads/ beside the sessions root) "+filepath.Join(d, "uploads"))
				require.NoDirExists(t, filepath.Join(d, "uploads"), "a refused store is not made")
			} else {
				require.Contains(t, msg, "skill_uploads.store "+tc.store+" ")
			}
		})
	}

	t.Run("a store beside them is taken", func(t *testing.T) {
		svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{skills}, SessionsRoot: sessions, Policy: uploadsPolicy(t, filepath.Join(d, "store")), Runner: &fakeEngine{}})
		require.NoError(t, err)
		require.NoError(t, svc.Close())
	})
}

// `serve --skills D/skills --sessions D/sessions` with uploads on and no
// store: one token's upload is never another's operator skill, and the
// other token may upload a skill of the same name.
func TestDefaultUploadStoreIsNotTheSkillsFolder(t *testing.T) {
	d := t.TempDir()
	skills, sessions := filepath.Join(d, "skills"), filepath.Join(d, "sessions")
	writeOperatorSkill(t, skills, "hello")
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{skills}, SessionsRoot: sessions, Policy: uploadsPolicy(t, ""), Runner: &fakeEngine{}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	st, err := sandboxrun.UploadStore(svc)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(d, "uploads"), st.Root())

	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	tenant := map[string]string{"SKILL.md": "---\nname: tenant-tool\ndescription: A tenant's. Use it in tests.\n---\nbody\n"}
	_, err = st.Put(a, skillstore.FormatTar, skillTarOf(t, tenant))
	require.NoError(t, err)

	sources := func(owner string) map[string]string {
		listed, errs := svc.For(sandboxrun.Caller{Owner: owner}).ListSkills()
		require.Empty(t, errs)
		got := map[string]string{}
		for _, l := range listed {
			got[l.Name] = string(l.Source)
		}
		return got
	}
	require.Equal(t, map[string]string{"hello": sandboxrun.SourceOperator, "tenant-tool": sandboxrun.SourceUploaded}, sources(a))
	require.Equal(t, map[string]string{"hello": sandboxrun.SourceOperator}, sources(b), "B sees none of A's uploads")
	_, err = svc.ResolveSkill(b, "tenant-tool")
	require.ErrorIs(t, err, skill.ErrSkillNotFound)

	up, err := st.Put(b, skillstore.FormatTar, skillTarOf(t, tenant))
	require.NoError(t, err, "the name is B's to take")
	require.True(t, up.Created)
}
