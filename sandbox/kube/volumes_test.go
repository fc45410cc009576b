package kube

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

func TestSourceOf(t *testing.T) {
	claims := []Claim{{Name: "skills", Path: "/srv/skills"}, {Name: "work", Path: "/data/ws"}}
	for _, tc := range []struct {
		dir  string
		want folderSource
	}{
		{"/srv/skills/hello", folderSource{claim: "skills", subPath: "hello"}},
		{"/srv/skills/team/a/b", folderSource{claim: "skills", subPath: "team/a/b"}},
		{"/srv/skills", folderSource{claim: "skills"}},
		{"/srv/skills/./team//x/", folderSource{claim: "skills", subPath: "team/x"}}, // compared clean
		{"/srv/skills2/hello", folderSource{}},                                       // a sibling with a longer name
		{"/srv", folderSource{}},                                                     // an ancestor of the claim
		{"/data/ws/p1", folderSource{claim: "work", subPath: "p1"}},
		{"/home/u/project", folderSource{}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			require.Equal(t, tc.want, sourceOf(tc.dir, claims))
		})
	}
}

// One volume per claim, each folder mounted read-only from its place in
// the claim; a folder under no claim still comes from the node.
func TestPodVolumesFromClaims(t *testing.T) {
	spec := goldenSpec()
	spec.SkillDir, spec.Workspace = "/srv/skills/team/hello", "/srv/skills/team/hello/assets"
	p := goldenParams()
	p.claims = []Claim{{Name: "sandbox-skills", Path: "/srv/skills"}}
	pod := podFor(&spec, p)
	var claimVols []corev1.Volume
	for _, v := range pod.Spec.Volumes {
		require.Nil(t, v.HostPath, "no hostPath when a claim holds the folder")
		if v.PersistentVolumeClaim != nil {
			claimVols = append(claimVols, v)
		}
	}
	require.Len(t, claimVols, 1)
	require.Equal(t, "sandbox-skills", claimVols[0].PersistentVolumeClaim.ClaimName)
	require.True(t, claimVols[0].PersistentVolumeClaim.ReadOnly)
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m
	}
	require.Equal(t, corev1.VolumeMount{Name: claimVols[0].Name, MountPath: "/skills/hello", SubPath: "team/hello", ReadOnly: true}, mounts["/skills/hello"])
	require.Equal(t, corev1.VolumeMount{Name: claimVols[0].Name, MountPath: "/workspace", SubPath: "team/hello/assets", ReadOnly: true}, mounts["/workspace"])

	spec.Workspace = "/home/u/project"
	pod = podFor(&spec, p)
	var host []string
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			host = append(host, v.HostPath.Path)
		}
	}
	require.Equal(t, []string{"/home/u/project"}, host)
}

func TestRunVolumeSources(t *testing.T) {
	root := t.TempDir()
	skills := filepath.Join(root, "skills")
	t.Run("host paths off refuses a folder under no claim before any API call", func(t *testing.T) {
		k, cs := newFake(t, &fakeInit{script: reply("", frame.Report{})}, nil,
			WithClaims(Claim{Name: "sandbox-skills", Path: skills}), WithHostPaths(false))
		spec := testSpec(t) // its skill folder is a temp dir under no claim
		res, err := k.Run(context.Background(), spec)
		require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
		require.ErrorContains(t, err, "sandbox-skills at "+skills)
		require.Nil(t, res)
		require.Empty(t, cs.Actions())
	})
	t.Run("a claim that does not exist is named at once", func(t *testing.T) {
		spec := testSpec(t)
		k, cs := newFake(t, &fakeInit{script: reply("", frame.Report{})}, nil,
			WithClaims(Claim{Name: "missing", Path: spec.SkillDir}), WithHostPaths(false))
		spec.Limits.Network = true
		res, err := k.Run(context.Background(), spec)
		require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
		require.ErrorContains(t, err, `volume claim "missing"`)
		require.Nil(t, res)
		requireNoPods(t, cs)
	})
	t.Run("a folder under a claim runs from it", func(t *testing.T) {
		spec := testSpec(t)
		k, cs := newFake(t, &fakeInit{script: reply("ok", frame.Report{StdoutBytes: 2})}, nil,
			WithClaims(Claim{Name: "skills", Path: filepath.Dir(spec.SkillDir)}), WithHostPaths(false))
		_, err := cs.CoreV1().PersistentVolumeClaims("sbx").Create(context.Background(),
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "skills"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		var created *corev1.Pod
		cs.PrependReactor("create", "pods", podRecorder(&created))
		spec.Limits.Network = true
		res, err := k.Run(context.Background(), spec)
		require.NoError(t, err)
		require.Equal(t, "ok", res.Stdout)
		require.NotNil(t, created)
		var found bool
		for _, m := range created.Spec.Containers[0].VolumeMounts {
			if m.MountPath == sandbox.SkillMount(spec.Skill) {
				found = true
				require.Equal(t, filepath.Base(spec.SkillDir), m.SubPath)
			}
		}
		require.True(t, found, "the skill is mounted")
		requireNoPods(t, cs)
	})
}

// podRecorder is a create reactor that keeps a copy of the created Pod
// and lets the others (newFake's) handle it.
func podRecorder(into **corev1.Pod) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		*into = a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		return false, nil, nil
	}
}
