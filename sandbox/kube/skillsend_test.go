package kube

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/internal/skillpack"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The skill's files go to init once, on the stream it opens for them.
func TestChannelSendsTheSkillOnce(t *testing.T) {
	c := newHostChannel(&sandbox.Spec{}, 0, slog.New(slog.DiscardHandler))
	c.skill = []byte("TAR BYTES")
	s := initSide(t, c)
	in := openKind(t, s, frame.StreamSkillIn)
	got, err := io.ReadAll(in)
	require.NoError(t, err)
	require.Equal(t, "TAR BYTES", string(got))
	again := openKind(t, s, frame.StreamSkillIn)
	got, _ = io.ReadAll(again)
	require.Empty(t, got, "a second request gets nothing")
	_, _ = c.close()
}

// A channel without a skill to send answers a request with nothing.
func TestChannelWithoutSkillRefuses(t *testing.T) {
	c := newHostChannel(&sandbox.Spec{}, 0, slog.New(slog.DiscardHandler))
	s := initSide(t, c)
	got, _ := io.ReadAll(openKind(t, s, frame.StreamSkillIn))
	require.Empty(t, got)
	_, _ = c.close()
}

// sentSpec is a run of a small skill under no claim.
func sentSpec(t *testing.T) sandbox.Spec {
	spec := testSpec(t)
	require.NoError(t, os.WriteFile(filepath.Join(spec.SkillDir, "SKILL.md"), []byte("---\nname: x\n---\n"), 0o644))
	spec.Limits.Network = true
	return spec
}

// With sending on and host paths off, a skill under no claim runs: its
// Pod mounts a tmpfs at /skills and nothing of the node, the job has
// init fetch the files into the skill's folder, and a second run of the
// same digest does not read the folder again.
func TestRunSendsTheSkill(t *testing.T) {
	init := &fakeInit{script: reply("ok", frame.Report{StdoutBytes: 2})}
	k, cs := newFake(t, init, nil, WithHostPaths(false), WithSkillSend(1<<20))
	var created *corev1.Pod
	cs.PrependReactor("create", "pods", podRecorder(&created))
	spec := sentSpec(t)
	a, err := skillpack.Pack(spec.Skill, spec.SkillDir, skillpack.Limit{Max: 1 << 20})
	require.NoError(t, err)
	spec.SkillDigest = a.Digest
	for range 2 {
		res, err := k.Run(context.Background(), spec)
		require.NoError(t, err)
		require.Equal(t, "ok", res.Stdout)
	}
	require.EqualValues(t, 1, k.skills.Packs(), "the second run takes the packed archive by its digest")
	job := init.jobs[len(init.jobs)-1]
	require.True(t, job.Channel)
	require.Equal(t, &frame.SkillFiles{Dir: sandbox.SkillMount(spec.Skill)}, job.Skill)
	for _, v := range created.Spec.Volumes {
		require.Nil(t, v.HostPath, "nothing of the node is mounted")
	}

	// The operator's acceptance of modes alone travels in the job.
	modes, _ := newFake(t, init, nil, WithHostPaths(false), WithSkillSend(1<<20), WithSkillModesOnly(true))
	_, err = modes.Run(context.Background(), spec)
	require.NoError(t, err)
	require.True(t, init.jobs[len(init.jobs)-1].Skill.ModesOnly)
	var skillMount *corev1.VolumeMount
	for i, m := range created.Spec.Containers[0].VolumeMounts {
		if m.Name == volSkill {
			skillMount = &created.Spec.Containers[0].VolumeMounts[i]
		}
	}
	require.NotNil(t, skillMount)
	require.Equal(t, sandbox.SkillsRoot, skillMount.MountPath)
	requireNoPods(t, cs)
}

// A skill that cannot be sent is refused before any API call, naming the
// skill, its size and the setting that raises the cap.
func TestRunRefusesASkillTooLargeToSend(t *testing.T) {
	k, cs := newFake(t, &fakeInit{script: reply("", frame.Report{})}, nil, WithHostPaths(false), WithSkillSend(64<<10))
	spec := sentSpec(t)
	require.NoError(t, os.WriteFile(filepath.Join(spec.SkillDir, "big.bin"), bytes.Repeat([]byte{1}, 100<<10), 0o644))
	res, err := k.Run(context.Background(), spec)
	require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
	require.ErrorIs(t, err, skillpack.ErrTooLarge)
	require.ErrorContains(t, err, "skill "+spec.Skill+" takes 104KiB in the sandbox")
	require.ErrorContains(t, err, "raise kubernetes.skill_send_max")
	require.Nil(t, res)
	require.Empty(t, cs.Actions())
}

// Sending off, host paths off: today's refusal, which now also names the
// setting that sends skills.
func TestRunWithoutSendingRefusesAsBefore(t *testing.T) {
	k, cs := newFake(t, &fakeInit{script: reply("", frame.Report{})}, nil, WithHostPaths(false))
	_, err := k.Run(context.Background(), sentSpec(t))
	require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
	require.ErrorContains(t, err, "host paths are off")
	require.ErrorContains(t, err, "kubernetes.skills: send")
	require.Empty(t, cs.Actions())
}

// A warm Pod, started before its skill was known, gets the skill's files
// from the run that takes it.
func TestWarmPodGetsTheSentSkill(t *testing.T) {
	init := &fakeInit{script: reply("ok", frame.Report{})}
	k, cs := newFake(t, init, nil, WithHostPaths(false), WithSkillSend(1<<20), WithWarmPool(1, time.Minute))
	t.Cleanup(func() { _ = k.Close() })
	spec := sentSpec(t)
	_, err := k.Run(context.Background(), spec)
	require.NoError(t, err)
	requireIdle(t, k, 1)
	_, err = k.Run(context.Background(), spec)
	require.NoError(t, err)
	require.EqualValues(t, 1, k.PoolStats().Hits)
	job := init.jobs[len(init.jobs)-1]
	require.Equal(t, &frame.SkillFiles{Dir: sandbox.SkillMount(spec.Skill)}, job.Skill)
	require.NoError(t, k.Close())
	require.Empty(t, livePods(t, cs))
}
