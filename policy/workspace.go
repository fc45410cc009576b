package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// ErrWorkspace is wrapped by every refusal of a workspace folder.
var ErrWorkspace = errors.New("unusable workspace")

// systemTrees are host folders that are never a workspace, nor is anything
// under them: the system's programs, libraries and configuration, kernel
// interfaces, and the engine's state.
var systemTrees = []string{
	"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot",
	"/dev", "/proc", "/sys", "/run", "/var/run", "/var/lib/docker",
}

// sharedParents are folders that hold everyone's files, or root's
// credentials (/root/.ssh, /root/.docker); they are refused themselves,
// while a project folder under them is fine.
var sharedParents = []string{"/", "/root", "/home", "/var", "/var/lib", "/tmp", "/srv", "/opt", "/mnt", "/media"}

// ResolveWorkspace checks a host folder to mount at /workspace and returns
// its resolved path (absolute, symlinks followed), which is what must be
// mounted: a symlink named "work" that points at / is judged, and mounted,
// as /.
//
// Refused: anything that is not an existing directory, / and the shared
// parents (/home, /var, /tmp, ...), the system trees (/etc, /usr, /proc,
// /var/lib/docker, root's home, ...) and everything under them, and any
// folder that contains the Docker socket (dockerSocket, "" for the
// default) or lies in the socket's folder.
//
// The check and the mount are separate steps: a host process that can
// rename folders on the path could swap one in between. Mounting the
// resolved path leaves only that window, which the caller's own host
// controls; the sandboxed script cannot reach it.
func ResolveWorkspace(dir, dockerSocket string) (string, error) {
	if dir == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", where.Errorf("%w: %q: %w", ErrWorkspace, where.Path(dir), err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", where.Errorf("%w: %q: %w (pass an existing directory with --workspace)", ErrWorkspace, where.Path(dir), err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", where.Errorf("%w: %q: %w (pass an existing directory with --workspace)", ErrWorkspace, where.Path(dir), err)
	}
	if !fi.IsDir() {
		return "", where.Errorf("%w: %q is not a directory; pass a directory with --workspace", ErrWorkspace, where.Path(dir))
	}
	shown := where.Sprintf("%q", where.Path(dir))
	if real != abs {
		shown = where.Sprintf("%q (resolved to %s)", where.Path(dir), where.Path(real))
	}
	for _, p := range sharedParents {
		if real == resolved(p) {
			return "", where.Errorf("%w: %s is %s, which holds other users' and the system's files; pass a project folder with --workspace (the default is the current directory)", ErrWorkspace, shown, p)
		}
	}
	for _, tree := range systemTrees {
		if PathWithin(real, resolved(tree)) {
			return "", where.Errorf("%w: %s is inside the system folder %s; pass a project folder with --workspace (the default is the current directory)", ErrWorkspace, shown, tree)
		}
	}
	sock := resolved(socketPath(dockerSocket))
	if dir := filepath.Dir(sock); PathWithin(sock, real) || (dir != "/" && PathWithin(real, dir)) {
		return "", where.Errorf("%w: %s contains or sits beside the Docker socket %s, which would hand the sandbox the engine; pass another folder with --workspace", ErrWorkspace, shown, where.Path(sock))
	}
	return real, nil
}

// socketPath is the Docker socket named by a DOCKER_HOST value, or the
// default socket.
func socketPath(dockerHost string) string {
	if p, ok := strings.CutPrefix(dockerHost, "unix://"); ok && p != "" {
		return p
	}
	return "/var/run/docker.sock"
}

// resolved follows symlinks in p (e.g. /var/run -> /run, /lib -> /usr/lib)
// and keeps p when it does not exist.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// PathWithin reports whether p is root or under it, comparing whole path
// elements (/srv/skills2 is not within /srv/skills); both are clean and
// absolute.
func PathWithin(p, root string) bool {
	if root == "/" {
		return true
	}
	return p == root || strings.HasPrefix(p, root+"/")
}
