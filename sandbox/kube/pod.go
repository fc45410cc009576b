package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// containerName is the one container of every sandbox Pod.
const containerName = "sandbox"

// podNamePrefix starts every Pod's name, so `kubectl get pods` shows at a
// glance which pods are sandboxes.
const podNamePrefix = "sandboxrun-"

// Volume names in the Pod.
const (
	volSkill     = "skill"
	volWorkspace = "workspace"
	volTmp       = "tmp"
	volRun       = "run"
)

// startAllowance is added to activeDeadlineSeconds for scheduling, image
// and container start: the deadline counts from the Pod's start, not the
// script's.
const startAllowance = 60 * time.Second

// ephemeralMargin is the Pod's ephemeral storage beyond the two output
// streams: the root file system is read-only, so only logs (the frames)
// and the kubelet's own files count.
const ephemeralMargin = 16 << 20

// podParams are the per-execution values that do not come from the Spec.
type podParams struct {
	namespace    string
	image        string
	runtimeClass string
	pullPolicy   corev1.PullPolicy
	version      string
	owner        map[string]string // sandbox.OwnerLabels
	created      time.Time
	deadline     time.Duration // activeDeadlineSeconds, before rounding up
	deleteGrace  time.Duration
	claims       []Claim // volume claims that hold skill folders or workspaces
	skillSendMax int64   // a skill under no claim is sent, in a tmpfs this large; 0: never
}

// podFor is the hardened Pod of one execution. It is a pure function of
// its inputs so golden files pin every security setting. The command is
// not in the Pod: sandbox-init is the entrypoint and reads the job on
// stdin once attached.
func podFor(spec *sandbox.Spec, p podParams) *corev1.Pod {
	uid, gid := int64(sandbox.SandboxUID), int64(sandbox.SandboxGID)
	no, yes := false, true
	grace := int64(math.Ceil(p.deleteGrace.Seconds()))
	deadline := int64(math.Ceil(p.deadline.Seconds()))
	runtimeDefault := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}

	mounts, volumes := podVolumes(spec, p.claims, p.skillSendMax)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      podName(spec.RunID),
			Namespace: p.namespace,
			Labels:    podLabels(spec, p),
			// Label values are restricted; the exact ones live here.
			Annotations: map[string]string{
				sandbox.LabelRunID:   spec.RunID,
				sandbox.LabelSkill:   spec.Skill,
				sandbox.LabelCreated: p.created.UTC().Format(time.RFC3339),
			},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			ShareProcessNamespace:         &no,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      &uid,
				RunAsGroup:     &gid,
				RunAsNonRoot:   &yes,
				SeccompProfile: runtimeDefault,
			},
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           p.image,
				ImagePullPolicy: p.pullPolicy,
				Command:         []string{sandbox.InitPath},
				// init's own environment; the script's is complete in
				// the job and inherits nothing from here.
				Env:        []corev1.EnvVar{{Name: "PATH", Value: sandbox.InitPathEnv}},
				WorkingDir: sandbox.WorkspaceDir,
				// The job arrives on stdin over one attach; stdinOnce
				// closes it when that attach ends.
				Stdin:     true,
				StdinOnce: true,
				TTY:       false,
				SecurityContext: &corev1.SecurityContext{
					RunAsUser:                &uid,
					RunAsGroup:               &gid,
					RunAsNonRoot:             &yes,
					Privileged:               &no,
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           runtimeDefault,
				},
				Resources:                podResources(spec),
				VolumeMounts:             mounts,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			Volumes: volumes,
		},
	}
	if p.runtimeClass != "" {
		rc := p.runtimeClass
		pod.Spec.RuntimeClassName = &rc
	}
	return pod
}

// podResources sets requests equal to limits, so the Pod is Guaranteed
// and the scheduler reserves exactly what the sandbox may use. The
// memory-backed /tmp is charged to the memory limit, as a tmpfs is in a
// Docker container.
func podResources(spec *sandbox.Spec) corev1.ResourceRequirements {
	l := spec.Limits
	list := corev1.ResourceList{
		corev1.ResourceMemory:           *resource.NewQuantity(l.MemoryBytes, resource.BinarySI),
		corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(math.Ceil(l.CPUs*1000)), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(2*l.OutputBytes+ephemeralMargin, resource.BinarySI),
	}
	return corev1.ResourceRequirements{Limits: list, Requests: list.DeepCopy()}
}

// podLabels are the io.sandboxrun.* labels the reaper selects on.
func podLabels(spec *sandbox.Spec, p podParams) map[string]string {
	l := map[string]string{
		sandbox.LabelManaged: "true",
		sandbox.LabelRunID:   labelValue(spec.RunID),
		sandbox.LabelSkill:   labelValue(spec.Skill),
	}
	for k, v := range p.owner {
		l[k] = labelValue(v)
	}
	if p.version != "" {
		l[sandbox.LabelVersion] = labelValue(p.version)
	}
	return l
}

var labelValuePattern = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$`)

// labelValue is v when Kubernetes accepts it as a label value, else a
// stable digest of it (the annotations keep the original).
func labelValue(v string) string {
	if labelValuePattern.MatchString(v) {
		return v
	}
	return "h-" + digest(v, 24)
}

var podNameUnsafe = regexp.MustCompile(`[^a-z0-9-]`)

// podName is a DNS label made from the run id. A run id that had to be
// changed gets a digest of the original, so two ids never share a name.
func podName(runID string) string {
	n := podNameUnsafe.ReplaceAllString(strings.ToLower(runID), "-")
	if n != runID {
		n = strings.Trim(n, "-")
		n = n[:min(len(n), 32)] + "-" + digest(runID, 12)
	}
	return podNamePrefix + strings.Trim(n, "-")
}

func digest(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}
