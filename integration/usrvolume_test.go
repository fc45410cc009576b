//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

// These tests need an engine whose storage driver is fuse-overlayfs, where
// runs mount a copy of their image's /usr; each checks that the copy was
// mounted, so they fail, not pass vacuously, on any other driver.

// usrMountProbe echoes stdin and prints the options of a mount at /usr,
// when there is one, as "key value" lines.
const usrMountProbe = `printf 'stdin %s\n' "$(cat)"
awk '$5 == "/usr" {print "usr_mount", $6}' /proc/self/mountinfo
`

// usrRunner is a runner of its own, with usr volumes on or off, whose
// cache no other run has filled, as another process's would be.
func usrRunner(t *testing.T, on bool) *docker.Runner {
	t.Helper()
	d, err := docker.New(docker.WithVersion(sandboxrun.Version), docker.WithDefaultImage(runner.Image()),
		docker.WithUsrVolumes(on), warnings())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

// probeFields runs spec with d and returns the "key value" lines it printed.
func probeFields(t *testing.T, d *docker.Runner, spec sandbox.Spec) (*sandbox.Result, map[string]string) {
	t.Helper()
	res := runWarm(t, d, spec)
	require.True(t, res.Success, "exit %d, stderr: %s", res.ExitCode, res.Stderr)
	return res, fieldsOf(res.Stdout)
}

func fieldsOf(stdout string) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		k, v, _ := strings.Cut(line, " ")
		fields[k] = v
	}
	return fields
}

// requireUsrMount asserts that /usr was a separate read-only mount when on,
// and part of the image's root file system otherwise.
func requireUsrMount(t *testing.T, fields map[string]string, on bool) {
	t.Helper()
	opts, mounted := fields["usr_mount"]
	if !on {
		require.False(t, mounted, "/usr is a mount of its own (%s) with usr volumes off", opts)
		return
	}
	require.True(t, mounted, "/usr is not a mount of its own: the run used no usr volume")
	require.Contains(t, strings.Split(opts, ","), "ro", "/usr is mounted writable")
}

// usrTestImage builds an image of its own id from the runner image and
// removes it, and the usr volumes made of it, when the test ends.
func usrTestImage(t *testing.T) (tag, id string) {
	t.Helper()
	nonce := strings.ToLower(rand.Text())
	tag = "sandboxrun-test/usr:" + nonce
	removeImageOnCleanup(t, tag)
	dir := t.TempDir()
	dockerfile := fmt.Sprintf("FROM %s\nLABEL io.sandboxrun.test-usr=%s\n", runner.Image(), nonce)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644))
	dockerCLI(t, "build", "--quiet", "--tag", tag, dir)
	id = dockerCLI(t, "image", "inspect", "--format", "{{.Id}}", tag)
	require.True(t, strings.HasPrefix(id, "sha256:"), "image id %q", id)
	t.Cleanup(func() {
		for name := range usrVolumes(t, id) {
			_ = runner.Client().VolumeRemove(context.Background(), name, true)
		}
	})
	return tag, id
}

// usrVolumes are the volumes labelled as usr volumes of an image id, or
// named as if they were (the engine makes an unlabelled volume of a name a
// container mounts that does not exist), by name.
func usrVolumes(t *testing.T, imageID string) map[string]*volume.Volume {
	t.Helper()
	out := map[string]*volume.Volume{}
	for _, f := range []filters.Args{
		filters.NewArgs(filters.Arg("label", docker.LabelUsrImage+"="+imageID)),
		filters.NewArgs(filters.Arg("name", usrMarker(imageID)), filters.Arg("name", usrDataPrefix(imageID))),
	} {
		list, err := runner.Client().VolumeList(context.Background(), volume.ListOptions{Filters: f})
		require.NoError(t, err)
		for _, v := range list.Volumes {
			out[v.Name] = v
		}
	}
	return out
}

// usrMarker and usrDataPrefix name an image's usr volumes as
// sandboxrun does.
func usrMarker(imageID string) string {
	return "sandboxrun-usr-" + strings.TrimPrefix(imageID, "sha256:")
}

func usrDataPrefix(imageID string) string {
	return "sandboxrun-usrdata-" + strings.TrimPrefix(imageID, "sha256:")[:12] + "-"
}

// requireOneUsrCopy asserts that imageID has exactly one marker and one
// data volume, the marker naming the data volume, and returns their names.
func requireOneUsrCopy(t *testing.T, imageID string) (marker, data string) {
	t.Helper()
	var markers, datas []string
	for _, v := range usrVolumes(t, imageID) {
		require.Equal(t, "true", v.Labels[sandbox.LabelManaged], "volume %s: %+v", v.Name, v.Labels)
		require.Equal(t, imageID, v.Labels[docker.LabelUsrImage], "volume %s", v.Name)
		if named, ok := v.Labels[docker.LabelUsrData]; ok {
			markers = append(markers, v.Name)
			data = named
		} else {
			datas = append(datas, v.Name)
		}
	}
	require.Equal(t, []string{usrMarker(imageID)}, markers, "markers of %s", imageID)
	require.Len(t, datas, 1, "data volumes of %s: %v", imageID, datas)
	require.Equal(t, datas[0], data, "the marker names the one data volume")
	require.True(t, strings.HasPrefix(data, usrDataPrefix(imageID)), "data volume %s", data)
	return markers[0], data
}

// runUsrImage runs the probe in tag with d and asserts that it succeeded,
// ran the image by id and mounted a usr volume.
func runUsrImage(t *testing.T, d *docker.Runner, tag, id string) {
	t.Helper()
	spec := shSpec(t, usrMountProbe)
	spec.Image = tag
	res, fields := probeFields(t, d, spec)
	require.Equal(t, id, res.ImageID)
	requireUsrMount(t, fields, true)
}

// watchEvents records the engine's events of typ ("container", "volume")
// and action ("create") from now on, as the engine streams them, until the
// returned function is called; it returns them. The engine keeps only its
// last 256 events for `docker events --since`, which the parallel tests
// (and anything else on the engine) push out within seconds.
func watchEvents(t *testing.T, typ events.Type, action events.Action) func() []events.Message {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	// Since now: the stream may connect after this call returns, and the
	// engine replays what happened in between from its history.
	msgs, errc := cli.Events(ctx, events.ListOptions{Since: fmt.Sprint(time.Now().Unix()), Filters: filters.NewArgs(
		filters.Arg("type", string(typ)), filters.Arg("event", string(action)))})
	var (
		mu   sync.Mutex
		seen []events.Message
		ferr error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case m := <-msgs:
				mu.Lock()
				seen = append(seen, m)
				mu.Unlock()
			case err := <-errc:
				if ctx.Err() == nil {
					mu.Lock()
					ferr = err
					mu.Unlock()
				}
				return
			}
		}
	}()
	t.Cleanup(cancel)
	return func() []events.Message {
		t.Helper()
		// The stream delivers an event moments after the call that caused
		// it returned.
		time.Sleep(time.Second)
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		require.NoError(t, ferr, "engine event stream")
		return slices.Clone(seen)
	}
}

// runOnAndOff runs script in the runner image with usr volumes on and off,
// each in a runner of its own, and asserts that /usr was a mount of its
// own only when on.
func runOnAndOff(t *testing.T, script string) map[bool]*sandbox.Result {
	t.Helper()
	out := map[bool]*sandbox.Result{}
	for _, on := range []bool{true, false} {
		spec := shSpec(t, script+usrMountProbe)
		// Hashing all of /usr is a minute of CPU on a loaded machine: the
		// limit is there to catch a hang, not to time it.
		spec.Limits.Timeout = 5 * time.Minute
		res, fields := probeFields(t, usrRunner(t, on), spec)
		requireUsrMount(t, fields, on)
		out[on] = res
	}
	return out
}

// The copy in the volume is the image's /usr: every file's name, type,
// mode, owner, size, mtime, link target and content are the same with the
// volume and without it. Directories are left out: their own mtimes change
// when the engine fills them.
func TestUsrVolumeIsTheImageUsr(t *testing.T) {
	t.Parallel()
	creates := watchEvents(t, events.ContainerEventType, events.ActionCreate)
	runs := runOnAndOff(t, `set -o pipefail
printf 'meta %s\n' "$(find /usr -xdev ! -type d -printf '%P %M %U %G %s %T@ %l\n' | LC_ALL=C sort | sha256sum)"
printf 'content %s\n' "$(find /usr -xdev -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum)"
printf 'files %s\n' "$(find /usr -xdev ! -type d | wc -l)"
`)
	on, off := fieldsOf(runs[true].Stdout), fieldsOf(runs[false].Stdout)
	require.NotEqual(t, "0", on["files"])
	for _, k := range []string{"files", "meta", "content"} {
		require.NotEmpty(t, off[k], k)
		require.Equal(t, off[k], on[k], "%s of /usr with the volume and without", k)
	}
	// With the volume, the container is made from the image the copy was
	// made of, by id, not from a tag that may have moved since.
	id := dockerCLI(t, "image", "inspect", "--format", "{{.Id}}", runner.Image())
	created := creates()
	for usr, want := range map[bool]string{true: id, false: runner.Image()} {
		require.Equal(t, id, runs[usr].ImageID, "usr volumes %v", usr)
		var images []string
		for _, m := range created {
			if m.Actor.Attributes[sandbox.LabelRunID] == runs[usr].ID {
				images = append(images, m.Actor.Attributes["image"])
			}
		}
		require.Equal(t, []string{want}, images, "usr volumes %v", usr)
	}
}

// /usr is read-only with the volume, exactly as it is without.
func TestUsrVolumeIsReadOnly(t *testing.T) {
	t.Parallel()
	runs := runOnAndOff(t, `for p in /usr/x /usr/lib/python3.11/x; do
	touch "$p" 2>&1
	echo "status $?"
done
`)
	writes := map[bool]string{}
	for on, res := range runs {
		writes[on], _, _ = strings.Cut(res.Stdout, "stdin ")
	}
	require.Equal(t, 2, strings.Count(writes[true], "Read-only file system"), "stdout: %s", writes[true])
	require.Equal(t, 2, strings.Count(writes[true], "status 1"), "stdout: %s", writes[true])
	require.Equal(t, writes[false], writes[true], "writes to /usr with the volume and without")
}

// Two processes filling the same image's copy at once publish one: the
// loser removes its own, and every run of either succeeds on the winner.
func TestUsrVolumeConcurrentFillPublishesOne(t *testing.T) {
	t.Parallel()
	tag, id := usrTestImage(t)
	runners := []*docker.Runner{usrRunner(t, true), usrRunner(t, true)}
	const runs = 6
	specs := make([]sandbox.Spec, runs)
	results := make([]*sandbox.Result, runs)
	errs := make([]error, runs)
	start := make(chan struct{})
	volumeCreates := watchEvents(t, events.VolumeEventType, events.ActionCreate)
	var wg sync.WaitGroup
	for i := range specs {
		specs[i] = shSpec(t, usrMountProbe)
		specs[i].Image = tag
		specs[i].Stdin = []byte(fmt.Sprint(i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			results[i], errs[i] = runners[i%2].Run(ctx, specs[i])
		}()
	}
	close(start)
	wg.Wait()
	for i, res := range results {
		require.NoError(t, errs[i], "run %d", i)
		require.True(t, res.Success, "run %d: exit %d, stderr: %s", i, res.ExitCode, res.Stderr)
		fields := fieldsOf(res.Stdout)
		require.Equal(t, fmt.Sprint(i), fields["stdin"], "run %d gets its own output", i)
		requireUsrMount(t, fields, true)
		require.Equal(t, id, res.ImageID, "run %d", i)
	}
	for _, d := range runners {
		require.NoError(t, d.WaitIdle(context.Background()))
	}
	requireOneUsrCopy(t, id)
	require.Empty(t, dockerCLI(t, "container", "ls", "--all", "--quiet", "--filter", "ancestor="+id),
		"no run or fill container of the image is left")
	fills := map[string]bool{}
	for _, m := range volumeCreates() {
		if strings.HasPrefix(m.Actor.ID, usrDataPrefix(id)) {
			fills[m.Actor.ID] = true
		}
	}
	require.GreaterOrEqual(t, len(fills), 2, "both runners filled a copy at once, else the race went untested: %v", fills)
}

// reapedOf reaps with d and returns what it reported of the named volumes.
func reapedOf(t *testing.T, d *docker.Runner, dryRun bool, names ...string) map[string]sandbox.Reaped {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reaped, err := d.Reap(ctx, sandbox.ReapOptions{DryRun: dryRun})
	require.NoError(t, err)
	out := map[string]sandbox.Reaped{}
	for _, r := range reaped {
		if slices.Contains(names, r.Name) {
			out[r.Name] = r
		}
	}
	return out
}

// Reap keeps an image's usr volumes while the image exists and removes
// them, and says so, once it is gone; a dry run only reports them.
func TestUsrVolumePrunedWithItsImage(t *testing.T) {
	// Serial (see main_test.go): reaps (usr volumes of removed images included).
	tag, id := usrTestImage(t)
	d := usrRunner(t, true)
	runUsrImage(t, d, tag, id)
	marker, data := requireOneUsrCopy(t, id)

	require.Empty(t, reapedOf(t, d, false, marker, data), "the image is still there")
	requireOneUsrCopy(t, id)

	dockerCLI(t, "image", "rm", tag)
	for _, dryRun := range []bool{true, false} {
		reaped := reapedOf(t, d, dryRun, marker, data)
		require.Len(t, reaped, 2, "dry run %v: %+v", dryRun, reaped)
		for name, r := range reaped {
			require.Equal(t, name, r.ID)
			require.Equal(t, !dryRun, r.Removed, "dry run %v: %s", dryRun, name)
			require.Contains(t, r.Reason, id)
		}
		if dryRun {
			requireOneUsrCopy(t, id)
		}
	}
	require.Empty(t, usrVolumes(t, id))
	require.Empty(t, reapedOf(t, d, false, marker, data), "nothing left to report")
}

// A copy removed behind sandboxrun's back, alone or with its marker, is
// made again by the next process's first run, also after a process that
// had learnt of the copy moments before mounted it once more: the engine
// then makes an empty volume of that name, which must not pass for a copy.
func TestUsrVolumeRecoversWhenRemoved(t *testing.T) {
	// Serial (see main_test.go): reaps (usr volumes of removed images included).
	for _, tt := range []struct {
		name                 string
		withMarker, staleRun bool
	}{
		{"data volume", false, false},
		{"data volume and marker", true, false},
		{"data volume, then mounted by a runner that knew it", false, true},
		{"data volume and marker, then mounted by a runner that knew them", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tag, id := usrTestImage(t)
			first := usrRunner(t, true)
			runUsrImage(t, first, tag, id)
			marker, data := requireOneUsrCopy(t, id)
			gone := []string{data}
			if tt.withMarker {
				gone = append(gone, marker)
			}
			dockerCLI(t, append([]string{"volume", "rm", "--force"}, gone...)...)
			if tt.staleRun {
				// Within its cache's lifetime: this run may fail, and is
				// not what is tested.
				spec := shSpec(t, usrMountProbe)
				spec.Image = tag
				res, err := first.Run(context.Background(), spec)
				t.Logf("run with a stale cache: err=%v success=%v", err, res != nil && res.Success)
				requireNoContainer(t, first, spec.RunID)
			}
			runUsrImage(t, usrRunner(t, true), tag, id)
			if tt.staleRun {
				// The stale run's mount made the engine create an empty,
				// unlabelled volume of the removed name. Where the marker
				// still named it, the new run removed it on sight; where
				// the marker went too, reap removes it.
				reaped := reapedOf(t, first, false, data)
				if tt.withMarker {
					require.True(t, reaped[data].Removed, "reap removes the empty volume: %+v", reaped)
				} else {
					require.Empty(t, reaped, "the run already removed it")
				}
			}
			_, again := requireOneUsrCopy(t, id)
			require.NotEqual(t, data, again, "a new copy")
		})
	}
}
