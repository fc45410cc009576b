package docker

import (
	"context"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"
)

// factsEngine answers the calls HostFacts makes.
type factsEngine struct {
	fakeClient
	image  *image.InspectResponse // nil: not found
	marker *volume.Volume         // nil: not found
}

func (e *factsEngine) Ping(context.Context) (types.Ping, error) {
	return types.Ping{APIVersion: "1.41"}, nil
}

func (e *factsEngine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (image.InspectResponse, error) {
	if e.image == nil {
		return image.InspectResponse{}, cerrdefs.ErrNotFound
	}
	return *e.image, nil
}

func (e *factsEngine) VolumeInspect(_ context.Context, name string) (volume.Volume, error) {
	if e.marker == nil || name != e.marker.Name {
		return volume.Volume{}, cerrdefs.ErrNotFound
	}
	return *e.marker, nil
}

func TestHostFacts(t *testing.T) {
	info := system.Info{
		ServerVersion: "20.10.24", KernelVersion: "6.1.0", Driver: "fuse-overlayfs", CgroupVersion: "1",
		SecurityOptions: []string{"name=seccomp,profile=default"}, DefaultRuntime: "runc", DockerRootDir: "/var/lib/docker",
		Runtimes: map[string]system.RuntimeWithStatus{"runsc": {}, "runc": {}},
	}
	t.Run("image and its usr copy present", func(t *testing.T) {
		e := &factsEngine{fakeClient: fakeClient{info: info},
			image:  &image.InspectResponse{ID: "sha256:abc", Config: &dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Labels: map[string]string{"k": "v"}}}},
			marker: &volume.Volume{Name: usrMarkerName("sha256:abc"), Labels: map[string]string{LabelUsrData: "sandboxrun-usrdata-abc-1"}},
		}
		d, err := New(WithClient(e), WithVersion("1.0"), WithOCIRuntime("runsc"))
		require.NoError(t, err)
		f, err := d.HostFacts(t.Context())
		require.NoError(t, err)
		require.Equal(t, "20.10.24", f.EngineVersion)
		require.Equal(t, "1.41", f.APIVersion)
		require.Equal(t, []string{"runc", "runsc"}, f.Runtimes)
		require.Equal(t, "runsc", f.OCIRuntime)
		require.Equal(t, "sandboxrun/runner:1.0", f.Image.Ref)
		require.True(t, f.Image.Present)
		require.Equal(t, "v", f.Image.Labels["k"])
		require.True(t, f.UsrVolumes)
		require.Equal(t, "sandboxrun-usrdata-abc-1", f.UsrVolume)
	})
	t.Run("image missing is a fact, not an error", func(t *testing.T) {
		d, err := New(WithClient(&factsEngine{fakeClient: fakeClient{info: info}}), WithVersion("1.0"), WithUsrVolumes(false))
		require.NoError(t, err)
		f, err := d.HostFacts(t.Context())
		require.NoError(t, err)
		require.False(t, f.Image.Present)
		require.False(t, f.UsrVolumes)
	})
}
