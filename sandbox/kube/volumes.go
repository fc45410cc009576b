package kube

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxrun/sandboxrun/internal/skillpack"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Claim is a PersistentVolumeClaim in the runner's namespace whose volume
// holds the same files sandboxrun sees under Path: a skill folder or a
// workspace under Path reaches the Pod from the claim (read-only, with the
// folder's place under Path as the mount's subPath) instead of from the
// node's file system.
type Claim struct {
	Name string
	Path string // absolute and clean, as sandboxrun sees the folder
}

// folderSource is where one folder of the Spec comes from in the Pod.
type folderSource struct {
	claim   string // PVC name; empty: hostPath
	subPath string // under the claim's root; empty for the root itself
}

// sourceOf finds the claim holding dir: the one whose Path is dir or an
// ancestor of it, the deepest when several are (the policy refuses
// overlapping claims, so there is one at most). No claim: hostPath.
func sourceOf(dir string, claims []Claim) folderSource {
	dir = filepath.Clean(dir)
	var best *Claim
	for i := range claims {
		c := &claims[i]
		if policy.PathWithin(dir, c.Path) && (best == nil || len(c.Path) > len(best.Path)) {
			best = c
		}
	}
	if best == nil {
		return folderSource{}
	}
	rel, _ := filepath.Rel(best.Path, dir) // PathWithin made it a descendant
	if rel == "." {
		rel = ""
	}
	return folderSource{claim: best.Name, subPath: filepath.ToSlash(rel)}
}

// sendsSkill says whether spec's skill folder travels over the side
// channel: sending is on (sendMax > 0) and no claim holds the folder.
func sendsSkill(spec *sandbox.Spec, claims []Claim, sendMax int64) bool {
	return sendMax > 0 && spec.SkillDir != "" && sourceOf(spec.SkillDir, claims).claim == ""
}

// checkSources refuses, before any API call, a folder no claim holds when
// host paths are off (a skill folder is sent instead when sending is on,
// and refused when it cannot be: too large, a link leaving it), and a
// claim that does not exist in the namespace.
func (k *Runner) checkSources(ctx context.Context, spec *sandbox.Spec) error {
	if sendsSkill(spec, k.claims, k.skillSendMax()) {
		if _, err := k.skillArchive(spec); err != nil {
			return err
		}
	}
	for _, f := range []struct{ what, dir string }{{"skill folder", spec.SkillDir}, {"workspace", spec.Workspace}} {
		if f.dir == "" || (f.dir == spec.Workspace && spec.WorkspaceWritable) {
			continue
		}
		src := sourceOf(f.dir, k.claims)
		if src.claim == "" {
			if f.dir == spec.SkillDir && sendsSkill(spec, k.claims, k.skillSendMax()) {
				continue
			}
			if !k.hostPaths {
				return fmt.Errorf("%w: the %s %s is under no volume claim of the kubernetes backend (%s) and host paths are off: "+
					"put it under a claim's path or list its claim in the policy's kubernetes.claims%s", sandbox.ErrInvalidSpec, f.what, f.dir, claimPaths(k.claims), sendHint(f.what))
			}
			continue
		}
		if err := k.checkClaim(ctx, src.claim); err != nil {
			return err
		}
	}
	return nil
}

// sendHint names the other way a skill folder reaches a Pod.
func sendHint(what string) string {
	if what != "skill folder" {
		return ""
	}
	return ", or have skill folders sent to the pod (kubernetes.skills: send)"
}

// skillSendMax is the cap on a sent skill; 0 when none are sent.
func (k *Runner) skillSendMax() int64 {
	if k.skills == nil {
		return 0
	}
	return k.skills.Limit().Max
}

// skillArchive is spec's skill folder packed to send (skillpack), from the
// runner's cache when the folder's digest is there.
func (k *Runner) skillArchive(spec *sandbox.Spec) (*skillpack.Archive, error) {
	a, err := k.skills.Get(spec.Skill, spec.SkillDir, spec.SkillDigest)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrInvalidSpec, err)
	}
	return a, nil
}

func claimPaths(claims []Claim) string {
	if len(claims) == 0 {
		return "none configured"
	}
	parts := make([]string, len(claims))
	for i, c := range claims {
		parts[i] = c.Name + " at " + c.Path
	}
	return strings.Join(parts, ", ")
}

// checkClaim reads the claim once per runner: a Pod naming a claim that
// does not exist waits in Pending until the start timeout, so say so at
// once. Without permission to read claims it cannot know, and the Pod's
// start says it instead.
func (k *Runner) checkClaim(ctx context.Context, name string) error {
	if _, ok := k.claimsSeen.Load(name); ok {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	defer cancel()
	pvc, err := k.client.PersistentVolumeClaims(k.namespace).Get(cctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		k.log.Debug("cannot read the volume claim to check it", "claim", name, "error", err)
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: volume claim %q (kubernetes.claims) does not exist in namespace %s: create it, or fix the policy",
			sandbox.ErrInvalidSpec, name, k.namespace)
	case err != nil:
		return apiError("read volume claim "+name, err)
	case pvc.Status.Phase == corev1.ClaimLost:
		return fmt.Errorf("%w: volume claim %q in namespace %s has lost its volume: bind it again", sandbox.ErrInvalidSpec, name, k.namespace)
	}
	k.claimsSeen.Store(name, true)
	return nil
}

// podVolumes mount the skill and a workspace read-only, each from the
// claim that holds it or else from the node (hostPath; Run refused that
// already when host paths are off), and /tmp as a size-limited tmpfs. A
// skill sent over the side channel (sendMax > 0, no claim holds it) gets
// instead a memory-backed emptyDir of sendMax bytes at /skills, which
// sandbox-init fills at the run's start: a warm Pod learns its skill
// only then.
func podVolumes(spec *sandbox.Spec, claims []Claim, sendMax int64) ([]corev1.VolumeMount, []corev1.Volume) {
	tmpSize := resource.NewQuantity(spec.Limits.TmpBytes, resource.BinarySI)
	mounts := []corev1.VolumeMount{{Name: volTmp, MountPath: sandbox.ScratchDir}}
	volumes := []corev1.Volume{{Name: volTmp, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: tmpSize},
	}}}
	claimVolume := map[string]string{} // claim → volume name, one volume per claim
	add := func(hostName, dir, mountPath string) {
		src := sourceOf(dir, claims)
		if src.claim == "" {
			dirType := corev1.HostPathDirectory
			mounts = append(mounts, corev1.VolumeMount{Name: hostName, MountPath: mountPath, ReadOnly: true})
			volumes = append(volumes, corev1.Volume{Name: hostName, VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType},
			}})
			return
		}
		vol, ok := claimVolume[src.claim]
		if !ok {
			vol = fmt.Sprintf("claim-%d", len(claimVolume))
			claimVolume[src.claim] = vol
			volumes = append(volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: src.claim, ReadOnly: true},
			}})
		}
		mounts = append(mounts, corev1.VolumeMount{Name: vol, MountPath: mountPath, SubPath: src.subPath, ReadOnly: true})
	}
	switch {
	case sendsSkill(spec, claims, sendMax):
		size := resource.NewQuantity(sendMax, resource.BinarySI)
		mounts = append(mounts, corev1.VolumeMount{Name: volSkill, MountPath: sandbox.SkillsRoot})
		volumes = append(volumes, corev1.Volume{Name: volSkill, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: size},
		}})
	case spec.SkillDir != "":
		add(volSkill, spec.SkillDir, sandbox.SkillMount(spec.Skill))
	}
	switch {
	case spec.WorkspaceWritable:
		// The files travel over the job's side channel into a tmpfs of
		// the size Run gave the limit (sandbox.WorkspaceSize).
		size := resource.NewQuantity(spec.Limits.WorkspaceWriteBytes, resource.BinarySI)
		mounts = append(mounts, corev1.VolumeMount{Name: volWorkspace, MountPath: sandbox.WorkspaceDir})
		volumes = append(volumes, corev1.Volume{Name: volWorkspace, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: size},
		}})
	case spec.Workspace != "":
		add(volWorkspace, spec.Workspace, sandbox.WorkspaceDir)
	}
	if spec.EgressCA != "" {
		// sandbox-init writes the egress proxy's trust bundle here.
		size := resource.NewQuantity(runDirBytes, resource.BinarySI)
		mounts = append(mounts, corev1.VolumeMount{Name: volRun, MountPath: path.Dir(sandbox.EgressCAPath)})
		volumes = append(volumes, corev1.Volume{Name: volRun, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: size},
		}})
	}
	return mounts, volumes
}
