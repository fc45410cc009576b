//go:build kube

package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	kubebackend "github.com/sandboxrun/sandboxrun/sandbox/kube"
	"github.com/sandboxrun/sandboxrun/sandboxtest"
)

// With kubernetes.claims, the skill folder and the workspace reach the Pod
// from a PersistentVolumeClaim, read-only, and not from the node: the
// volume here holds a copy of sandboxrun's folders that differs in one
// file, and the script must see the volume's.
func TestSkillAndWorkspaceFromAVolumeClaim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// What sandboxrun reads (host) and what the claim's volume holds (vol).
	host, vol := sandboxtest.HostDir(t), sandboxtest.HostDir(t)
	for root, origin := range map[string]string{host: "node\n", vol: "claim\n"} {
		for _, dir := range []string{"skills/probe", "work/p1"} {
			require.NoError(t, os.MkdirAll(filepath.Join(root, dir), 0o755))                            //nolint:gosec // the sandbox user reads it
			require.NoError(t, os.WriteFile(filepath.Join(root, dir, "origin"), []byte(origin), 0o644)) //nolint:gosec // as above
		}
	}
	claim := boundClaim(ctx, t, vol)

	k, err := kubebackend.New(kubebackend.WithRESTConfig(restConfig(t)), kubebackend.WithNamespace(runner.Namespace()),
		kubebackend.WithVersion(sandboxrun.Version), kubebackend.WithDefaultImage(sandboxrun.RunnerImage()),
		kubebackend.WithClaims(kubebackend.Claim{Name: claim, Path: host}), kubebackend.WithHostPaths(false))
	require.NoError(t, err)
	t.Cleanup(func() { _ = k.Close() })

	spec := sandbox.Spec{
		Skill: "probe", SkillDir: filepath.Join(host, "skills/probe"), Workspace: filepath.Join(host, "work/p1"),
		Argv: []string{"bash", "-c", `cat "$SKILL_DIR/origin" /workspace/origin
for d in "$SKILL_DIR" /workspace; do if touch "$d/new" 2>/dev/null; then echo writable; else echo read-only; fi; done`},
		Limits: sandboxtest.DefaultLimits(),
	}
	res, err := k.Run(ctx, spec)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	require.Equal(t, "claim\nclaim\nread-only\nread-only\n", res.Stdout)
	requirePodGone(t, res.ID)
	require.NoFileExists(t, filepath.Join(vol, "skills/probe/new"))

	t.Run("a folder under no claim is refused when host paths are off", func(t *testing.T) {
		outside := spec
		outside.SkillDir = sandboxtest.HostSkillDir(t, nil)
		res, err := k.Run(ctx, outside)
		require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
		require.ErrorContains(t, err, "host paths are off")
		require.Nil(t, res, "refused before any pod")
	})
	t.Run("a claim that does not exist is named", func(t *testing.T) {
		missing, err := kubebackend.New(kubebackend.WithRESTConfig(restConfig(t)), kubebackend.WithNamespace(runner.Namespace()),
			kubebackend.WithVersion(sandboxrun.Version), kubebackend.WithDefaultImage(sandboxrun.RunnerImage()),
			kubebackend.WithClaims(kubebackend.Claim{Name: "no-such-claim", Path: host}))
		require.NoError(t, err)
		res, err := missing.Run(ctx, spec)
		require.ErrorIs(t, err, sandbox.ErrInvalidSpec)
		require.ErrorContains(t, err, `volume claim "no-such-claim" (kubernetes.claims) does not exist`)
		require.Nil(t, res)
	})
}

func restConfig(t *testing.T) *rest.Config {
	t.Helper()
	cfg, err := kubebackend.RESTConfig(os.Getenv("SANDBOXRUN_KUBECONFIG"))
	require.NoError(t, err)
	return cfg
}

// boundClaim makes a ReadOnlyMany PersistentVolume over dir (a hostPath
// volume, as a test cluster can have; an operator's would be NFS, CephFS
// or a CSI driver) and a claim bound to it in the sandbox namespace, and
// returns the claim's name. Volumes are cluster-wide: this needs the
// test cluster's admin, not the sandboxrun user.
func boundClaim(ctx context.Context, t *testing.T, dir string) string {
	t.Helper()
	adminCfg, err := kubebackend.RESTConfig(filepath.Join(os.Getenv("SANDBOXRUN_K8S_RUN"), "admin.kubeconfig"))
	require.NoError(t, err, "the test cluster's admin kubeconfig (SANDBOXRUN_K8S_RUN, set by hack/with-k8s.sh)")
	admin, err := kubernetes.NewForConfig(adminCfg)
	require.NoError(t, err)
	name, class, ns := fmt.Sprintf("sandboxrun-test-%d", os.Getpid()), "sandboxrun-test", runner.Namespace()
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      size,
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: name},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			StorageClassName: &class,
			VolumeName:       name,
			Resources:        corev1.VolumeResourceRequirements{Requests: size},
		},
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admin.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, metav1.DeleteOptions{})
		_ = admin.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{})
	})
	_, err = admin.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.ClaimBound
	}, time.Minute, 250*time.Millisecond, "claim %s bound to its volume", name)
	return name
}
