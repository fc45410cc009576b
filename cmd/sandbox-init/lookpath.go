package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// lookPath finds file the way a shell would, but in the job's PATH rather
// than init's, and relative to the job's cwd for names with a slash (exec
// runs after the chdir). Empty and relative PATH entries are skipped: they
// would make the command depend on the cwd, which the script controls.
func lookPath(file, path, dir string) (string, error) {
	if strings.Contains(file, "/") {
		p := file
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := checkExecutable(p); err != nil {
			return "", err
		}
		return file, nil
	}
	if path == "" {
		return "", fmt.Errorf("%w: %q: the job's env has no PATH: set PATH or give an absolute path", errCommandNotFound, file)
	}
	var denied error
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, file)
		err := checkExecutable(p)
		if err == nil {
			return p, nil
		}
		if denied == nil && !errors.Is(err, errCommandNotFound) {
			denied = err
		}
	}
	if denied != nil {
		return "", denied
	}
	return "", fmt.Errorf("%w: %q is not in PATH %s: install it in the runner image or give an absolute path", errCommandNotFound, file, path)
}

// checkExecutable tells "not there" (127) from "there but not runnable" (126).
func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s does not exist", errCommandNotFound, p)
		}
		return fmt.Errorf("stat %s: %w", p, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory: give the program inside it", p)
	}
	if err := unix.Access(p, unix.X_OK); err != nil {
		return fmt.Errorf("%s is not executable (%w): chmod +x it or run it through its interpreter", p, err)
	}
	return nil
}

// checkDir checks the cwd before fork, because a failed chdir in the child
// comes back as a bare ENOENT that would read as "command not found".
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("working directory: %w: mount it or fix cwd in the job", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("working directory %s is not a directory: fix cwd in the job", dir)
	}
	return nil
}

// execError classifies what the kernel said about exec.
func execError(path string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%w: exec %s: %w: if it is a script, its #! interpreter is missing", errCommandNotFound, path, err)
	case errors.Is(err, unix.ENOEXEC):
		return fmt.Errorf("exec %s: %w: it is neither a binary nor has a #! line; run it through its interpreter", path, err)
	case errors.Is(err, unix.EACCES):
		return fmt.Errorf("exec %s: %w: make it executable or run it through its interpreter", path, err)
	}
	return fmt.Errorf("exec %s: %w", path, err)
}

// envValue returns the value of key in a KEY=VALUE list (validate has made
// keys unique).
func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
