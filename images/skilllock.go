package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/internal/userdir"
	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Concurrent runs of a skill whose image is missing must build it once.
// Inside one process, buildOnce lets the first caller build and the others
// wait for its result; across processes on this host, an flock on a file
// named after the image serialises the builds, and whoever gets the lock
// second finds the image and builds nothing.

// flight is one build in progress in this process.
type flight struct {
	done chan struct{}
	img  Image
	err  error
}

var flights = struct {
	sync.Mutex
	m map[string]*flight
}{m: map[string]*flight{}}

// buildOnce runs fn once per key among concurrent callers; the others get
// its result with Built false, since they built nothing. A waiter whose
// own context is still live retries when the build it waited for was
// cancelled by its starter's context, instead of inheriting that
// cancellation.
func buildOnce(ctx context.Context, key string, fn func(context.Context) (Image, error)) (Image, error) {
	for {
		flights.Lock()
		f, ok := flights.m[key]
		if !ok {
			f = &flight{done: make(chan struct{})}
			flights.m[key] = f
			flights.Unlock()
			f.img, f.err = fn(ctx)
			flights.Lock()
			delete(flights.m, key)
			flights.Unlock()
			close(f.done)
			return f.img, f.err
		}
		flights.Unlock()
		select {
		case <-ctx.Done():
			return Image{}, fmt.Errorf("waiting for the build of the skill image: %w", ctx.Err())
		case <-f.done:
		}
		if isCancel(f.err) && ctx.Err() == nil {
			continue
		}
		// This caller built nothing itself.
		img := f.img
		img.Built = false
		return img, f.err
	}
}

func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// lockPoll is how often a waiting process retries the lock; a build takes
// seconds at least, so this costs nothing noticeable.
const lockPoll = 200 * time.Millisecond

// lockBuild takes the host-wide build lock for ref, waiting (and saying
// so) while another process holds it. The returned function releases it and
// removes the lock file (and its folder, once empty), so builds leave
// nothing behind in the temp directory.
func lockBuild(ctx context.Context, ref string, rep *reporter) (func(), error) {
	name := strings.NewReplacer("/", "_", ":", "_").Replace(ref) + ".lock"
	said := false
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("waiting for the build lock of %s: %w", ref, err)
		}
		dir, err := lockDir()
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, os.ErrNotExist) {
			// Another process removed the empty folder between our mkdir
			// and open: make it again.
			continue
		}
		if err != nil {
			return nil, where.Errorf("opening the build lock %s: %w", where.Path(path), err)
		}
		if err := flockWait(ctx, f, ref, rep, &said); err != nil {
			_ = f.Close()
			return nil, err
		}
		// The holder before us unlinks the file before it unlocks, so the
		// lock we got may be on a file no longer at path; another process
		// may already hold the one that is. Only a lock on the file path
		// names counts.
		if !sameFile(f, path) {
			_ = f.Close()
			continue
		}
		return func() {
			_ = os.Remove(path)
			_ = unix.Rmdir(dir) // fails while other locks live in it, as it should
			_ = f.Close()
		}, nil
	}
}

// flockWait blocks until f is exclusively locked or ctx ends, reporting the
// wait once.
func flockWait(ctx context.Context, f *os.File, ref string, rep *reporter, said *bool) error {
	fd := int(f.Fd()) //nolint:gosec // a file descriptor fits in an int
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return where.Errorf("locking %s: %w", where.Path(f.Name()), err)
		}
		if !*said {
			rep.stepf("waiting for another sandboxrun process that is building %s", ref)
			*said = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the build lock of %s: %w", ref, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// sameFile reports whether the open file f is still the file at path.
func sameFile(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Lstat(path)
	return err == nil && os.SameFile(held, now)
}

// lockDir is the per-user folder of build locks (userdir.Private).
func lockDir() (string, error) { return userdir.Private("locks") }
