package layout

import "path"

// Paths inside every sandbox, whatever the backend (docs/security.md).
const (
	// InitPath is sandbox-init, the sandbox's PID 1.
	InitPath = "/usr/local/bin/sandbox-init"
	// SkillsRoot holds each skill folder, at SkillDir(name).
	SkillsRoot = "/skills"
	// WorkspaceDir is where the caller's workspace appears, and where
	// scripts start unless asked otherwise.
	WorkspaceDir = "/workspace"
	// ScratchDir is the size-capped writable scratch space, also HOME.
	ScratchDir = "/tmp"
	// VenvDir is the Python environment of a skill image with
	// python_packages; the sandbox puts its bin/ first on PATH.
	VenvDir = "/opt/sandboxrun/venv"
	// EgressSocketPath is where a run's egress proxy socket is mounted;
	// sandbox-init relays the in-sandbox proxy address to it.
	EgressSocketPath = "/run/sandboxrun/egress.sock"
	// EgressCAPath is where the egress proxy's trust bundle is mounted
	// when the proxy adds credentials to TLS requests.
	EgressCAPath = "/run/sandboxrun/ca.pem"
	// ImageCABundle is the image's own trust bundle, which the proxy's is
	// mounted over too.
	ImageCABundle = "/etc/ssl/certs/ca-certificates.crt"
)

// ScriptsFolder is the folder of a skill whose files can run, e.g.
// /skills/<name>/scripts/x.py.
const ScriptsFolder = "scripts"

// BaseDirPlaceholder is what a skill's text (its SKILL.md body, its
// allowed-tools, a script reference) names its own folder by; it resolves
// to SkillDir.
const BaseDirPlaceholder = "{baseDir}"

// SkillDir is the skill folder's path inside the sandbox, which {baseDir}
// in a SKILL.md resolves to.
func SkillDir(skill string) string { return path.Join(SkillsRoot, skill) }

// UID and GID are the ids scripts run as when the caller is root (never 0),
// and the `sandbox` user of the runner image (Dockerfile.runner says the
// same number; TestRunnerDockerfileUser keeps them equal).
const (
	UID = 65532
	GID = 65532
)

// Label keys on what sandboxrun creates. The reserved prefix lets a reaper
// or a prune find sandboxrun's own without touching anyone else's.
const (
	LabelPrefix = "io.sandboxrun."

	// On every sandbox (container, pod) and every image.
	LabelManaged = LabelPrefix + "managed"
	LabelVersion = LabelPrefix + "version"
	LabelSkill   = LabelPrefix + "skill"

	// On sandboxes.
	LabelRunID      = LabelPrefix + "run-id"
	LabelCreated    = LabelPrefix + "created"
	LabelOwnerPID   = LabelPrefix + "owner-pid"
	LabelOwnerStart = LabelPrefix + "owner-start"
	LabelOwnerHost  = LabelPrefix + "owner-host"

	// On images.
	LabelKind        = LabelPrefix + "kind"
	LabelContentHash = LabelPrefix + "content-hash"
	LabelBaseID      = LabelPrefix + "base.id"
	LabelDepsHash    = LabelPrefix + "deps-hash"
	LabelPython      = LabelPrefix + "skill.python-packages"
	LabelSystem      = LabelPrefix + "skill.system-packages"
	LabelProfile     = LabelPrefix + "profile"
)

// Image repositories sandboxrun builds.
const (
	// RunnerRepo is the runner image's repository; its tag is the version.
	RunnerRepo = "sandboxrun/runner"
	// SkillRepoPrefix starts the repository of every skill image:
	// sandboxrun/skill-<name>.
	SkillRepoPrefix = "sandboxrun/skill-"
)

// RunnerRef is the runner image of a sandboxrun version.
func RunnerRef(version string) string { return RunnerRepo + ":" + version }
