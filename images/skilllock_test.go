package images

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildOnce(t *testing.T) {
	t.Run("concurrent callers share one build; only the builder reports Built", func(t *testing.T) {
		var calls atomic.Int32
		release := make(chan struct{})
		fn := func(context.Context) (Image, error) {
			calls.Add(1)
			<-release
			return Image{Ref: "r", ID: "sha256:x", Built: true}, nil
		}
		const n = 8
		var wg sync.WaitGroup
		results := make([]Image, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = buildOnce(context.Background(), "key-share", fn)
			}()
		}
		// Let every goroutine join the flight before it lands.
		require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, time.Millisecond)
		time.Sleep(50 * time.Millisecond)
		close(release)
		wg.Wait()
		require.Equal(t, int32(1), calls.Load())
		built := 0
		for i, r := range results {
			require.NoError(t, errs[i])
			require.Equal(t, "sha256:x", r.ID)
			if r.Built {
				built++
			}
		}
		require.Equal(t, 1, built)
	})

	t.Run("a waiter retries when the build it waited for was cancelled", func(t *testing.T) {
		started := make(chan struct{})
		leaderCtx, cancelLeader := context.WithCancel(context.Background())
		var calls atomic.Int32
		fn := func(ctx context.Context) (Image, error) {
			if calls.Add(1) == 1 {
				close(started)
				<-ctx.Done()
				return Image{}, ctx.Err()
			}
			return Image{ID: "sha256:second", Built: true}, nil
		}
		leaderErr := make(chan error, 1)
		go func() {
			_, err := buildOnce(leaderCtx, "key-retry", fn)
			leaderErr <- err
		}()
		<-started
		type outcome struct {
			img Image
			err error
		}
		waiter := make(chan outcome, 1)
		go func() {
			img, err := buildOnce(context.Background(), "key-retry", fn)
			waiter <- outcome{img, err}
		}()
		time.Sleep(50 * time.Millisecond)
		cancelLeader()
		require.ErrorIs(t, <-leaderErr, context.Canceled)
		got := <-waiter
		require.NoError(t, got.err)
		require.Equal(t, "sha256:second", got.img.ID)
		require.Equal(t, int32(2), calls.Load())
	})

	t.Run("a waiter gives up on its own context", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		go func() {
			_, _ = buildOnce(context.Background(), "key-give-up", func(context.Context) (Image, error) {
				<-release
				return Image{}, nil
			})
		}()
		time.Sleep(20 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := buildOnce(ctx, "key-give-up", func(context.Context) (Image, error) { return Image{}, errors.New("must not run") })
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestLockBuild(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	var progress bytes.Buffer
	rep := newReporter(&progress, nil)
	ref := "sandboxrun/skill-x:0123"

	unlock, err := lockBuild(context.Background(), ref, rep)
	require.NoError(t, err)

	// flock locks belong to an open file description, so a second open in
	// this process contends exactly as another process would.
	ctx, cancel := context.WithTimeout(context.Background(), 3*lockPoll)
	_, err = lockBuild(ctx, ref, rep)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, progress.String(), "waiting for another sandboxrun process that is building "+ref)

	got := make(chan error, 1)
	go func() {
		u, err := lockBuild(context.Background(), ref, rep)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(lockPoll / 2)
	unlock()
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not get the lock after it was released")
	}

	t.Run("another image is not blocked", func(t *testing.T) {
		u1, err := lockBuild(context.Background(), "sandboxrun/skill-a:1", rep)
		require.NoError(t, err)
		defer u1()
		u2, err := lockBuild(context.Background(), "sandboxrun/skill-b:1", rep)
		require.NoError(t, err)
		u2()
	})

	t.Run("released locks leave no file and no folder behind", func(t *testing.T) {
		u, err := lockBuild(context.Background(), "sandboxrun/skill-c:1", rep)
		require.NoError(t, err)
		require.DirExists(t, filepath.Join(xdg, "sandboxrun-locks"))
		u()
		require.NoDirExists(t, filepath.Join(xdg, "sandboxrun-locks"))
	})

	t.Run("many contenders hold the lock one at a time", func(t *testing.T) {
		var holders, maxHolders atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u, err := lockBuild(context.Background(), "sandboxrun/skill-d:1", rep)
				if !assert.NoError(t, err) {
					return
				}
				n := holders.Add(1)
				for {
					m := maxHolders.Load()
					if n <= m || maxHolders.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(5 * time.Millisecond)
				holders.Add(-1)
				u()
			}()
		}
		wg.Wait()
		require.Equal(t, int32(1), maxHolders.Load(), "two holders at once: a lock on an unlinked file was taken as valid")
		require.NoDirExists(t, filepath.Join(xdg, "sandboxrun-locks"))
	})
}

func TestLockDirRefusesAnOpenFolder(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	dir := filepath.Join(xdg, "sandboxrun-locks")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o777))
	_, err := lockDir()
	require.Error(t, err)
	require.Contains(t, err.Error(), "closed to others")

	require.NoError(t, os.Remove(dir))
	require.NoError(t, os.Symlink(t.TempDir(), dir))
	_, err = lockDir()
	require.Error(t, err, "a symlink is not our folder")

	require.NoError(t, os.Remove(dir))
	got, err := lockDir()
	require.NoError(t, err)
	require.Equal(t, dir, got)
}
