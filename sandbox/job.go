package sandbox

import (
	"maps"
	"path"
	"slices"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/internal/layout"
)

// Paths inside every sandbox, whatever the backend (docs/design.md,
// "Inside the sandbox").
const (
	// InitPath is sandbox-init, the sandbox's PID 1.
	InitPath = layout.InitPath
	// SkillsRoot holds the skill folder, at SkillMount(skill).
	SkillsRoot = layout.SkillsRoot
	// WorkspaceDir is where the workspace appears, and the default working
	// directory.
	WorkspaceDir = layout.WorkspaceDir
	// ScratchDir is the size-capped writable scratch space, also HOME.
	ScratchDir = layout.ScratchDir
	// InitPathEnv is init's own PATH (not the script's, which is in the
	// job).
	InitPathEnv = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// VenvDir is where a skill image keeps the Python environment holding
	// the skill's python_packages. Its bin/ comes first on the script's
	// PATH so python3 is the environment's; in the plain runner image the
	// folder does not exist and the lookup falls through.
	VenvDir    = layout.VenvDir
	scriptPath = VenvDir + "/bin:" + InitPathEnv
)

// EnvRunID names the run in the script's environment.
const EnvRunID = "SANDBOXRUN_RUN_ID"

// EnvTraceParent carries the request's W3C traceparent to the script, the
// name OpenTelemetry SDKs read for a parent from the environment.
const EnvTraceParent = "TRACEPARENT"

// SkillMount is where the skill folder appears inside the sandbox.
func SkillMount(skill string) string { return layout.SkillDir(skill) }

// JobFor is what sandbox-init receives for spec: the command, its complete
// environment, the arguments for its stdin and the limits init enforces.
// grace is how long init waits between SIGTERM and SIGKILL.
func JobFor(spec *Spec, version string, grace time.Duration) frame.Job {
	return frame.Job{
		Argv:      slices.Clone(spec.Argv),
		Env:       ScriptEnv(spec, version),
		Dir:       spec.workDir(),
		Stdin:     spec.Stdin,
		TimeoutMS: ceilMS(EffectiveTimeout(spec.Limits)),
		GraceMS:   ceilMS(grace),
		OutputCap: spec.Limits.OutputBytes,
		Egress:    egressJob(spec),
	}
}

// workDir is where the script starts: Validate allows only the workspace
// and the skill's folder.
func (s *Spec) workDir() string {
	if s.Dir == "" {
		return WorkspaceDir
	}
	return s.Dir
}

// ScriptEnv is the script's whole environment: the variables sandboxrun
// sets, then the caller's in name order. Nothing comes from the host.
func ScriptEnv(spec *Spec, version string) []string {
	dir := SkillMount(spec.Skill)
	env := []string{
		"SKILL_NAME=" + spec.Skill,
		"SKILL_VERSION=" + spec.SkillVersion,
		"SKILL_BASE_DIR=" + dir,
		"SKILL_DIR=" + dir,
		"SCRIPTS_DIR=" + path.Join(dir, "scripts"),
		"SANDBOXRUN_VERSION=" + version,
		EnvRunID + "=" + spec.RunID,
		"PATH=" + scriptPath,
		"HOME=" + ScratchDir,
		"LANG=C.UTF-8",
	}
	env = append(env, egressEnv(spec)...)
	if _, set := spec.Env[EnvTraceParent]; spec.TraceParent != "" && !set {
		env = append(env, EnvTraceParent+"="+spec.TraceParent)
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		env = append(env, k+"="+spec.Env[k])
	}
	return env
}

func ceilMS(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
