package main

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLookPath(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string, mode os.FileMode) string {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), mode))
		return p
	}
	exe := mk("bin/tool", 0o755)
	mk("noexec/tool", 0o644)
	mk("noexec/only", 0o644)
	mk("cwd/local", 0o755)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "bin/adir"), 0o755))
	binDir, noexecDir, cwd := filepath.Join(root, "bin"), filepath.Join(root, "noexec"), filepath.Join(root, "cwd")
	// From inside cwd, "." or "" in PATH would find "local" if they were
	// honoured.
	t.Chdir(cwd)

	tests := []struct {
		name     string
		file     string
		path     string
		want     string
		notFound bool   // error is 127
		says     string // error is 126 and says this
	}{
		{"found in PATH", "tool", binDir, exe, false, ""},
		{"later entry wins over non-executable", "tool", noexecDir + ":" + binDir, exe, false, ""},
		{"absolute path", exe, "", exe, false, ""},
		{"slash path is relative to cwd", "./local", "", "./local", false, ""},
		{"missing", "nope", binDir, "", true, ""},
		{"no PATH", "tool", "", "", true, ""},
		{"relative PATH entry skipped", "local", ".:cwd", "", true, ""},
		{"empty PATH entry skipped", "local", ":", "", true, ""},
		{"missing absolute", filepath.Join(root, "nope"), binDir, "", true, ""},
		{"not executable", "only", noexecDir, "", false, "not executable"},
		{"directory", "adir", binDir, "", false, "is a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookPath(tc.file, tc.path, cwd)
			switch {
			case tc.notFound:
				require.ErrorIs(t, err, errCommandNotFound)
				require.Equal(t, exitNotFound, failed(err).ExitCode)
			case tc.says != "":
				require.ErrorContains(t, err, tc.says)
				require.NotErrorIs(t, err, errCommandNotFound)
				require.Equal(t, exitCannotExecute, failed(err).ExitCode)
			default:
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
			}
		})
	}
}

func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))

	require.NoError(t, checkDir(""))
	require.NoError(t, checkDir(dir))
	err := checkDir(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NotErrorIs(t, err, errCommandNotFound, "a missing cwd must not read as 127")
	require.ErrorContains(t, checkDir(file), "not a directory")
}

func TestExecErrorCodes(t *testing.T) {
	tests := []struct {
		errno syscall.Errno
		code  int
	}{
		{syscall.ENOENT, exitNotFound},
		{syscall.EACCES, exitCannotExecute},
		{syscall.ENOEXEC, exitCannotExecute},
		{syscall.E2BIG, exitCannotExecute},
	}
	for _, tc := range tests {
		t.Run(tc.errno.Error(), func(t *testing.T) {
			err := execError("/x", tc.errno)
			require.ErrorIs(t, err, tc.errno)
			rep := failed(err)
			require.Equal(t, tc.code, rep.ExitCode)
			require.Contains(t, rep.Error, "/x")
		})
	}
	require.Equal(t, exitCannotExecute, failed(errors.New("anything")).ExitCode)
}

func TestEnvValue(t *testing.T) {
	env := []string{"PATHX=no", "PATH=/a:/b", "P=1"}
	require.Equal(t, "/a:/b", envValue(env, "PATH"))
	require.Equal(t, "1", envValue(env, "P"))
	require.Empty(t, envValue(env, "HOME"))
}
