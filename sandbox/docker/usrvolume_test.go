package docker

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

const testImageID = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// usrEngine is a fake engine on fuse-overlayfs with volumes: it keeps the
// volumes it is asked to create, answers one image, and records every
// container's configuration.
type usrEngine struct {
	*fakeClient
	mu        sync.Mutex
	volumes   map[string]volume.Volume
	images    map[string]string // ref -> id
	created   []createdBox
	inspects  int
	createErr error // fails the fill's (volume-mounting, RW) creates only
}

type createdBox struct {
	cfg *container.Config
	hc  *container.HostConfig
}

func newUsrEngine() *usrEngine {
	f := &fakeClient{info: system.Info{Driver: usrDriver}, init: func(_ frame.Job, out, _ io.Writer, _ <-chan struct{}) {
		report(out, frame.Report{})
	}}
	return &usrEngine{fakeClient: f, volumes: map[string]volume.Volume{},
		images: map[string]string{"sandboxrun/runner:0.1.0-test": testImageID, testImageID: testImageID}}
}

// newUsrRunner is a runner on a fresh usrEngine.
func newUsrRunner(t *testing.T, opts ...Option) (*usrEngine, *Runner) {
	e := newUsrEngine()
	d := newTestDocker(t, e.fakeClient, opts...)
	d.client = e
	return e, d
}

func (e *usrEngine) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inspects++
	id, ok := e.images[ref]
	if !ok {
		return image.InspectResponse{}, cerrdefs.ErrNotFound
	}
	return image.InspectResponse{ID: id}, nil
}

// VolumeCreate returns the existing volume for a name taken, as the
// engine does.
func (e *usrEngine) VolumeCreate(_ context.Context, o volume.CreateOptions) (volume.Volume, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.volumes[o.Name]; ok {
		return v, nil
	}
	v := volume.Volume{Name: o.Name, Labels: o.Labels, CreatedAt: time.Now().UTC().Format(time.RFC3339)}
	e.volumes[o.Name] = v
	return v, nil
}

func (e *usrEngine) VolumeInspect(_ context.Context, name string) (volume.Volume, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.volumes[name]
	if !ok {
		return volume.Volume{}, cerrdefs.ErrNotFound
	}
	return v, nil
}

func (e *usrEngine) VolumeList(_ context.Context, o volume.ListOptions) (volume.ListResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out volume.ListResponse
	for _, v := range e.volumes {
		_, labelled := v.Labels[LabelUsrImage]
		switch {
		case o.Filters.Contains("label") && (!o.Filters.ExactMatch("label", LabelUsrImage) || !labelled):
		case o.Filters.Contains("name") && !o.Filters.Match("name", v.Name):
		default:
			out.Volumes = append(out.Volumes, &v)
		}
	}
	return out, nil
}

func (e *usrEngine) VolumeRemove(ctx context.Context, name string, force bool) error {
	e.mu.Lock()
	delete(e.volumes, name)
	e.mu.Unlock()
	return e.fakeClient.VolumeRemove(ctx, name, force)
}

func (e *usrEngine) ContainerCreate(ctx context.Context, cfg *container.Config, hc *container.HostConfig,
	nc *network.NetworkingConfig, p *ocispec.Platform, name string) (container.CreateResponse, error) {
	e.mu.Lock()
	e.created = append(e.created, createdBox{cfg: cfg, hc: hc})
	fillErr := e.createErr
	e.mu.Unlock()
	if fillErr != nil && len(hc.Mounts) > 0 && hc.Mounts[len(hc.Mounts)-1].Target == usrDir && !hc.Mounts[len(hc.Mounts)-1].ReadOnly {
		return container.CreateResponse{}, fillErr
	}
	return e.fakeClient.ContainerCreate(ctx, cfg, hc, nc, p, name)
}

func (e *usrEngine) usrVolumes() (markers, data []volume.Volume) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, v := range e.volumes {
		if strings.HasPrefix(v.Name, "sandboxrun-usrdata-") {
			data = append(data, v)
		} else {
			markers = append(markers, v)
		}
	}
	return markers, data
}

// usrMountOf is the /usr mount of a container's configuration, if any.
func usrMountOf(hc *container.HostConfig) (mount.Mount, bool) {
	for _, m := range hc.Mounts {
		if m.Target == usrDir {
			return m, true
		}
	}
	return mount.Mount{}, false
}

func TestUsrVolumeFilledOnceThenMountedReadOnly(t *testing.T) {
	e, d := newUsrRunner(t)
	for range 2 {
		res, err := d.Run(context.Background(), testSpec(t))
		require.NoError(t, err)
		require.Equal(t, testImageID, res.ImageID, "known from the create, not asked again")
		settled(t, d) // the removal, in the background, before the next run
	}
	markers, data := e.usrVolumes()
	require.Len(t, markers, 1)
	require.Len(t, data, 1)
	require.Equal(t, usrMarkerName(testImageID), markers[0].Name)
	require.Equal(t, data[0].Name, markers[0].Labels[LabelUsrData])
	require.Equal(t, testImageID, data[0].Labels[LabelUsrImage])

	// The fill container, then the two sandboxes.
	require.Len(t, e.created, 3)
	fill := e.created[0]
	m, ok := usrMountOf(fill.hc)
	require.True(t, ok)
	require.Equal(t, mount.Mount{Type: mount.TypeVolume, Source: data[0].Name, Target: usrDir}, m,
		"the engine fills an empty volume it mounts (NoCopy unset)")
	require.Equal(t, []string{"ALL"}, []string(fill.hc.CapDrop))
	require.True(t, fill.cfg.NetworkDisabled)
	for _, c := range e.created[1:] {
		require.Equal(t, testImageID, c.cfg.Image, "created from the id the copy was made of")
		m, ok := usrMountOf(c.hc)
		require.True(t, ok)
		require.True(t, m.ReadOnly)
		require.Equal(t, data[0].Name, m.Source)
		require.True(t, m.VolumeOptions.NoCopy, "a missing volume must not be filled by a sandbox")
	}
	require.NotContains(t, e.Calls()[2:], "inspect", "no container inspect for the image id")
	require.Equal(t, []string{"create", "remove", "create", "attach", "start", "wait", "remove", "create", "attach", "start", "wait", "remove"},
		e.Calls(), "the fill container is created and removed, never started")
	require.Equal(t, 1, e.inspects, "the ref's id is reused within usrTTL")
}

func TestUsrVolumeLoserRemovesItsCopy(t *testing.T) {
	e, d := newUsrRunner(t)
	// Another process published first, after this one looked.
	other := "sandboxrun-usrdata-0123456789ab-feedbeef"
	d.client = &racingEngine{usrEngine: e, publish: func() {
		e.volumes[other] = volume.Volume{Name: other, Labels: map[string]string{LabelUsrImage: testImageID}}
		e.volumes[usrMarkerName(testImageID)] = volume.Volume{Name: usrMarkerName(testImageID),
			Labels: map[string]string{LabelUsrImage: testImageID, LabelUsrData: other}}
	}}
	_, err := d.Run(context.Background(), testSpec(t))
	require.NoError(t, err)
	settled(t, d)
	_, data := e.usrVolumes()
	require.Len(t, data, 1)
	require.Equal(t, other, data[0].Name, "the copy the marker names is kept, the loser's removed")
	m, ok := usrMountOf(e.created[len(e.created)-1].hc)
	require.True(t, ok)
	require.Equal(t, other, m.Source)
}

// racingEngine publishes another process's marker just before this one
// creates its own.
type racingEngine struct {
	*usrEngine
	once    sync.Once
	publish func()
}

func (r *racingEngine) VolumeCreate(ctx context.Context, o volume.CreateOptions) (volume.Volume, error) {
	if o.Labels[LabelUsrData] != "" {
		r.once.Do(func() { r.mu.Lock(); r.publish(); r.mu.Unlock() })
	}
	return r.usrEngine.VolumeCreate(ctx, o)
}

func TestUsrVolumeFillFailureRunsWithoutIt(t *testing.T) {
	e, d := newUsrRunner(t)
	e.createErr = errors.New("no space left on device")
	for range 2 {
		res, err := d.Run(context.Background(), testSpec(t))
		require.NoError(t, err, "a failed copy is not the run's failure")
		require.True(t, res.Success)
	}
	settled(t, d)
	markers, data := e.usrVolumes()
	require.Empty(t, markers)
	require.Empty(t, data, "the half-made copy is removed")
	fills := 0
	for _, c := range e.created {
		if m, ok := usrMountOf(c.hc); ok {
			require.False(t, m.ReadOnly, "only the fill mounts a usr volume here")
			fills++
		} else {
			require.Equal(t, "sandboxrun/runner:0.1.0-test", c.cfg.Image, "without a copy, the image by its ref")
		}
	}
	require.Equal(t, 1, fills, "a failed fill is not tried again on every run")
}

func TestUsrVolumeOnlyOnFuseOverlayfsAndWhenOn(t *testing.T) {
	for _, tt := range []struct {
		name   string
		driver string
		opts   []Option
	}{
		{"overlay2", "overlay2", nil},
		{"turned off", usrDriver, []Option{WithUsrVolumes(false)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, d := newUsrRunner(t, tt.opts...)
			e.info.Driver = tt.driver
			_, err := d.Run(context.Background(), testSpec(t))
			require.NoError(t, err)
			settled(t, d)
			require.Len(t, e.created, 1)
			_, ok := usrMountOf(e.created[0].hc)
			require.False(t, ok)
			require.Zero(t, e.inspects)
		})
	}
}

func TestUsrVolumeRefreshesAfterTTL(t *testing.T) {
	e, d := newUsrRunner(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d.now = func() time.Time { return now }
	ctx := context.Background()
	first := d.usrFor(ctx, "sandboxrun/runner:0.1.0-test")
	require.NotEmpty(t, first.volume)

	// The copy is removed behind the runner's back; within usrTTL the
	// runner does not know, after it, it makes a new one.
	e.mu.Lock()
	delete(e.volumes, first.volume)
	e.mu.Unlock()
	require.Equal(t, first, d.usrFor(ctx, "sandboxrun/runner:0.1.0-test"))
	now = now.Add(usrTTL)
	// The tag moved to a rebuilt image meanwhile.
	rebuilt := "sha256:" + strings.Repeat("ab", 32)
	e.mu.Lock()
	e.images["sandboxrun/runner:0.1.0-test"] = rebuilt
	e.mu.Unlock()
	second := d.usrFor(ctx, "sandboxrun/runner:0.1.0-test")
	require.Equal(t, rebuilt, second.imageID)
	require.NotEqual(t, first.volume, second.volume)
	again := d.usrFor(ctx, testImageID)
	require.NotEqual(t, first.volume, again.volume, "a marker naming a removed copy is replaced")
	_, err := e.VolumeInspect(ctx, again.volume)
	require.NoError(t, err)
}

func TestUsrMarkerOfAnotherImageIsRefused(t *testing.T) {
	e, d := newUsrRunner(t)
	e.volumes[usrMarkerName(testImageID)] = volume.Volume{Name: usrMarkerName(testImageID),
		Labels: map[string]string{LabelUsrImage: "sha256:other", LabelUsrData: "sandboxrun-usrdata-x"}}
	_, err := d.markedUsr(context.Background(), testImageID)
	require.ErrorContains(t, err, "is not a usr marker of image "+testImageID)
	require.Empty(t, d.usrFor(context.Background(), testImageID).volume, "runs go on without")
}

func TestPruneUsrRemovesVolumesOfGoneImagesAndUnfinishedCopies(t *testing.T) {
	e, d := newUsrRunner(t)
	ctx := context.Background()
	kept := d.usrFor(ctx, testImageID)
	gone := "sha256:" + strings.Repeat("cd", 32)
	e.images[gone] = gone
	goneUsr := d.usrFor(ctx, gone)
	delete(e.images, gone)
	old := time.Now().Add(-2 * usrFillTimeout).UTC().Format(time.RFC3339)
	e.volumes["sandboxrun-usrdata-0123456789ab-deadbeef"] = volume.Volume{Name: "sandboxrun-usrdata-0123456789ab-deadbeef",
		CreatedAt: old, Labels: map[string]string{sandbox.LabelManaged: "true", LabelUsrImage: testImageID}}
	e.volumes["sandboxrun-usrdata-0123456789ab-0badf00d"] = volume.Volume{Name: "sandboxrun-usrdata-0123456789ab-0badf00d",
		CreatedAt: time.Now().UTC().Format(time.RFC3339), Labels: map[string]string{sandbox.LabelManaged: "true", LabelUsrImage: testImageID}}

	dry, err := d.PruneUsr(ctx, true)
	require.NoError(t, err)
	require.Len(t, dry, 3)
	require.Len(t, e.volumes, 6, "a dry run removes nothing")

	reaped, err := d.PruneUsr(ctx, false)
	require.NoError(t, err)
	var names []string
	for _, r := range reaped {
		require.True(t, r.Removed)
		names = append(names, r.Name)
	}
	require.ElementsMatch(t, []string{goneUsr.volume, usrMarkerName(gone), "sandboxrun-usrdata-0123456789ab-deadbeef"}, names)
	_, err = e.VolumeInspect(ctx, kept.volume)
	require.NoError(t, err, "the copy of an image that is here stays")
	_, err = e.VolumeInspect(ctx, "sandboxrun-usrdata-0123456789ab-0badf00d")
	require.NoError(t, err, "a copy being filled now stays")
	again, err := d.PruneUsr(ctx, false)
	require.NoError(t, err)
	require.Empty(t, again)
}

// The engine makes an empty, unlabelled volume when a sandbox mounts a
// copy removed meanwhile: it is never taken for the copy, and prune
// removes one no marker names any more.
func TestUsrImpostorIsReplacedAndPruned(t *testing.T) {
	e, d := newUsrRunner(t)
	ctx := context.Background()
	first := d.usrFor(ctx, testImageID)
	e.mu.Lock()
	e.volumes[first.volume] = volume.Volume{Name: first.volume} // removed, then made again by a mount
	e.mu.Unlock()
	d.forgetUsr(testImageID) // as after the sandbox failed to start

	second := d.usrFor(ctx, testImageID)
	require.NotEqual(t, first.volume, second.volume)
	_, err := e.VolumeInspect(ctx, first.volume)
	require.True(t, cerrdefs.IsNotFound(err), "the impostor is removed")

	stray := usrDataPrefix + "0123456789ab-00000000"
	e.mu.Lock()
	e.volumes[stray] = volume.Volume{Name: stray}
	e.volumes["unrelated"] = volume.Volume{Name: "unrelated"}
	e.mu.Unlock()
	reaped, err := d.PruneUsr(ctx, false)
	require.NoError(t, err)
	require.Len(t, reaped, 1)
	require.Equal(t, stray, reaped[0].Name)
	require.Contains(t, reaped[0].Reason, "empty volume")
	_, err = e.VolumeInspect(ctx, "unrelated")
	require.NoError(t, err, "volumes that are not sandboxrun's are not touched")
	_, err = e.VolumeInspect(ctx, second.volume)
	require.NoError(t, err)
}
