package sandboxrun_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/audit"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skill"
	"github.com/sandboxrun/sandboxrun/skillstore"
)

func TestSkillPathAcceptsWhatAModelSees(t *testing.T) {
	for ref, want := range map[string]string{
		"SKILL.md":                        "SKILL.md",
		"./SKILL.md":                      "SKILL.md",
		"references/a.md":                 "references/a.md",
		"references//a.md":                "references/a.md",
		"references/./a.md":               "references/a.md",
		"{baseDir}/scripts/x.py":          "scripts/x.py",
		"/skills/hello/scripts/x.py":      "scripts/x.py",
		"/skills/hello/references/a b.md": "references/a b.md",
	} {
		got, err := sandboxrun.SkillPath("hello", ref)
		require.NoError(t, err, ref)
		require.Equal(t, want, got, ref)
	}
}

func TestSkillPathRefusesHostPaths(t *testing.T) {
	abs, err := filepath.Abs("skills/hello/scripts/echo.py")
	require.NoError(t, err)
	for _, ref := range []string{
		"", "/", "/etc/passwd", abs, "/skills/other/scripts/x.py", "/skills/hello", "/skills/hello/",
		"/skills/hello/.", "/skills/helloX/x", "{baseDir}", "{baseDir}/", "{baseDir}/..", "{baseDir}/../other/x", "{baseDir}//etc/passwd", "/skills/hello//etc/passwd",
		"..", "../x", "a/../../x", "a/..", "a/../b", "/skills/hello/../other/x", ".", "./",
		`scripts\x.py`, `..\x`, "a\x00b", "a\nb", "a\x7fb", "a\rb",
	} {
		_, err := sandboxrun.SkillPath("hello", ref)
		require.ErrorIs(t, err, sandboxrun.ErrRefused, "ref %q", ref)
	}
}

// FuzzSkillPath holds the invariant every accepted name must keep: a clean,
// relative path with no ".." element, which therefore stays inside the skill
// folder lexically.
func FuzzSkillPath(f *testing.F) {
	for _, s := range []string{"SKILL.md", "/skills/hello/x", "{baseDir}/a/../b", "a/./b//c", "../x", "/etc", "a\\b", "x/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		rel, err := sandboxrun.SkillPath("hello", ref)
		if err != nil {
			require.ErrorIs(t, err, sandboxrun.ErrRefused)
			return
		}
		require.NotEmpty(t, rel)
		require.Equal(t, path.Clean(rel), rel)
		require.False(t, path.IsAbs(rel), "accepted %q as %q", ref, rel)
		require.NotContains(t, strings.Split(rel, "/"), "..", "accepted %q as %q", ref, rel)
		root := "/srv/skills/hello"
		require.True(t, strings.HasPrefix(filepath.Join(root, rel), root+"/"), "accepted %q as %q", ref, rel)
	})
}

// skillTree writes a skill whose folder holds every kind of file a read must
// tell apart, and a secret next to it that no read may reach.
func skillTree(t *testing.T) (root, dir string) {
	t.Helper()
	root = t.TempDir()
	dir = filepath.Join(root, "files")
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	write("skill.md", "---\nname: files\ndescription: d\n---\nbody\n")
	write("references/a.md", "# A\n")
	write("scripts/x.py", "print(1)\n")
	write(".git/config", "[remote] url = https://token@example.invalid\n")
	write("references/.env", "KEY=1\n")
	require.NoError(t, os.WriteFile(filepath.Join(root, "secret.txt"), []byte("secret"), 0o600))
	require.NoError(t, os.Symlink("a.md", filepath.Join(dir, "references", "inside-link.md")))
	require.NoError(t, os.Symlink("../../secret.txt", filepath.Join(dir, "references", "up-link.md")))
	require.NoError(t, os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(dir, "references", "abs-link.md")))
	require.NoError(t, os.Symlink(root, filepath.Join(dir, "assets")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "references", "pipe"), 0o644))
	big := make([]byte, sandboxrun.MaxSkillFileBytes+1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "references", "big.bin"), big, 0o644))
	return root, dir
}

func TestReadSkillFileStaysInsideTheSkill(t *testing.T) {
	root, _ := skillTree(t)
	svc, _ := newService(t, sandboxrun.Config{SkillRoots: []string{root}})

	for ref, want := range map[string]string{
		"SKILL.md":                      "---\nname: files\ndescription: d\n---\nbody\n",
		"references/a.md":               "# A\n",
		"/skills/files/references/a.md": "# A\n",
		"{baseDir}/scripts/x.py":        "print(1)\n",
		"references/inside-link.md":     "# A\n",
	} {
		f, err := sandboxrun.ReadSkillFileOf(svc, "files", ref)
		require.NoError(t, err, ref)
		require.Equal(t, want, string(f.Data), ref)
		require.Equal(t, "files", f.Skill)
	}
	f, err := sandboxrun.ReadSkillFileOf(svc, "files", "SKILL.md")
	require.NoError(t, err)
	require.Equal(t, "SKILL.md", f.Path, "the manifest keeps its spec name whatever its spelling on disk")

	for ref, notFound := range map[string]bool{
		"references/none.md":              true,
		"SKILL.md/x":                      true,
		"references/up-link.md":           false,
		"references/abs-link.md":          false,
		"assets/secret.txt":               false,
		"references/pipe":                 false,
		"references/big.bin":              false,
		"references":                      false,
		".git/config":                     false,
		"references/.env":                 false,
		"../secret.txt":                   false,
		filepath.Join(root, "secret.txt"): false,
	} {
		_, err := sandboxrun.ReadSkillFileOf(svc, "files", ref)
		require.ErrorIs(t, err, sandboxrun.ErrRefused, ref)
		require.Equal(t, notFound, errors.Is(err, sandboxrun.ErrSkillFileNotFound), "%s: %v", ref, err)
		if !strings.Contains(ref, root) {
			require.NotContains(t, err.Error(), root, "%s: a refusal names no host path the caller did not give", ref)
		}
	}

	_, err = sandboxrun.ReadSkillFileOf(svc, "../files", "SKILL.md")
	require.ErrorIs(t, err, sandboxrun.ErrRefused, "the skill is named, never a path")
}

// TestReadSkillFileReachesTheOwnersUploads: a Door's ReadSkillFile reads the
// owner's upload; another owner, and the local caller (no uploads), find
// no such skill.
func TestReadSkillFileReachesTheOwnersUploads(t *testing.T) {
	pol, err := policy.ParsePolicy("p.yaml", []byte("skill_uploads:\n  allow: tokens\n  store: "+t.TempDir()+"\n"))
	require.NoError(t, err)
	svc, _ := newService(t, sandboxrun.Config{Policy: pol})
	st, err := sandboxrun.UploadStore(svc)
	require.NoError(t, err)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := "---\nname: mine\ndescription: Mine. Use it in tests.\n---\nbody\n"
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "SKILL.md", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
	_, err = tw.Write([]byte(body))
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	owner, other := strings.Repeat("a", 64), strings.Repeat("b", 64)
	_, err = st.Put(owner, skillstore.FormatTar, &buf)
	require.NoError(t, err)

	f, err := svc.For(sandboxrun.Caller{Owner: owner}).ReadSkillFile("mine", "SKILL.md")
	require.NoError(t, err)
	require.Equal(t, body, string(f.Data))
	for name, read := range map[string]func() (*sandboxrun.SkillFile, error){
		"another owner": func() (*sandboxrun.SkillFile, error) {
			return svc.For(sandboxrun.Caller{Owner: other}).ReadSkillFile("mine", "SKILL.md")
		},
		"no owner": func() (*sandboxrun.SkillFile, error) {
			return svc.For(sandboxrun.Local).ReadSkillFile("mine", "SKILL.md")
		},
	} {
		_, err := read()
		require.ErrorIs(t, err, skill.ErrSkillNotFound, name)
	}
}

func TestRunScriptRefusesHostPathsFromRemoteCallers(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(logPath)
	require.NoError(t, err)
	obs := &observed{}
	svc, eng := newService(t, sandboxrun.Config{Audit: log, Observer: obs})
	abs, err := filepath.Abs("skills/hello/scripts/echo.py")
	require.NoError(t, err)
	ctx := context.Background()

	for _, script := range []string{abs, "../hello/scripts/echo.py", "/etc/passwd", "scripts/../../x"} {
		_, err := svc.RunScript(ctx, "hello", script, sandboxrun.Request{})
		require.ErrorIs(t, err, sandboxrun.ErrRefused, script)
	}
	require.Empty(t, eng.specs, "nothing refused reached the engine")

	for _, script := range []string{"scripts/echo.py", "{baseDir}/scripts/echo.py", "/skills/hello/scripts/echo.py"} {
		_, err := svc.RunScript(ctx, "hello", script, sandboxrun.Request{})
		require.NoError(t, err, script)
	}
	require.Len(t, eng.specs, 3)
	for _, sp := range eng.specs {
		require.Equal(t, []string{"python3", "/skills/hello/scripts/echo.py"}, sp.Argv)
	}

	_, err = svc.RunScript(ctx, "nope", "scripts/echo.py", sandboxrun.Request{})
	require.ErrorIs(t, err, sandboxrun.ErrRefused, "an unknown skill is RunScript's refusal")

	recs := readAudit(t, logPath)
	require.Len(t, recs, 8, "every request is recorded, refusals included")
	require.True(t, recs[0].Refused)
	require.Equal(t, abs, recs[0].Script)
	require.Equal(t, []string{"hello:refused", "hello:refused", "hello:refused", "hello:refused",
		"hello:success", "hello:success", "hello:success", ":refused"}, obs.got)
}
