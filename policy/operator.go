package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// ErrPolicyFile is wrapped by every error reading an operator policy file.
var ErrPolicyFile = errors.New("invalid policy file")

// DefaultPolicyPath is read when neither --policy nor $SANDBOXRUN_POLICY
// names a file and it exists.
const DefaultPolicyPath = "/etc/sandboxrun/policy.yaml"

// Values of the policy's enumerations.
const (
	OnExceedClamp  = "clamp"
	OnExceedRefuse = "refuse"

	NetworkNone      = "none"
	NetworkAllowlist = "allowlist"
	NetworkDeclared  = "declared"

	WriteReadOnly = "read-only"
	WriteDeclared = "declared"
)

// Operator is the operator's policy: defaults, ceilings, network, workspace
// and runtime rules, build settings and per-skill grants. A skill's values
// are requests judged against it; nothing a skill or a caller says widens it.
// The zero value is not valid: use BuiltinPolicy or LoadPolicy.
type Operator struct {
	// Source is the file the policy came from, or BuiltinSource.
	Source string `yaml:"-" json:"source"`
	// Digest is the sha256 of the file's bytes, or "builtin".
	Digest string `yaml:"-" json:"digest"`

	Limits   LimitRules      `yaml:"limits" json:"limits"`
	OnExceed Setting[string] `yaml:"on_exceed" json:"on_exceed"`
	Network  Setting[string] `yaml:"network" json:"network"`
	// AllowedDomains is what every skill may reach under network:
	// allowlist (a skill's grant adds to it).
	AllowedDomains Setting[[]string] `yaml:"allowed_domains" json:"allowed_domains"`
	Egress         EgressRules       `yaml:"egress" json:"egress"`
	Workspace      WorkspaceRules    `yaml:"workspace" json:"workspace"`
	// Sessions govern the workspaces a server keeps across calls.
	Sessions SessionRules `yaml:"sessions" json:"sessions"`
	// Tenants share the server between its tokens: fair share and quotas.
	Tenants TenantRules `yaml:"tenants" json:"tenants"`
	// Cache is the opt-in result cache (cache.go).
	Cache CacheRules `yaml:"cache" json:"cache"`
	// SkillUploads govern the skills callers upload (skilluploads.go).
	SkillUploads SkillUploadRules `yaml:"skill_uploads" json:"skill_uploads"`
	Runtime      Setting[string]  `yaml:"runtime" json:"runtime"`
	// RunnerProfile is the runner profile every sandbox starts from
	// (documents, office); empty for the plain runner.
	RunnerProfile Setting[string]    `yaml:"profile" json:"profile"`
	Build         BuildRules         `yaml:"build" json:"build"`
	Skills        map[string]*Grants `yaml:"skills" json:"skills,omitempty"`
	// Secrets are the credentials the egress proxy adds to requests
	// (secrets.go); skills get them through Grants.Secrets.
	Secrets map[string]*SecretRule `yaml:"secrets" json:"secrets,omitempty"`

	// BackendRules (backend.go): docker or kubernetes, and its settings.
	BackendRules `yaml:",inline"`

	domains egressrule.Allowlist
}

// LimitRules hold a default and a ceiling per limit.
type LimitRules struct {
	Timeout        Range[Duration] `yaml:"timeout" json:"timeout"`
	Memory         Range[Size]     `yaml:"memory" json:"memory"`
	CPUs           Range[Number]   `yaml:"cpus" json:"cpus"`
	Pids           Range[Count]    `yaml:"pids" json:"pids"`
	Output         Range[Size]     `yaml:"output" json:"output"`
	WorkspaceWrite Range[Size]     `yaml:"workspace_write" json:"workspace_write"`
}

// WorkspaceRules govern /workspace.
type WorkspaceRules struct {
	// Write is read-only (never writable) or declared (Write in
	// allowed-tools decides).
	Write Setting[string] `yaml:"write" json:"write"`
	// Roots, when set, are the folders a workspace must resolve under.
	Roots Setting[[]string] `yaml:"roots" json:"roots"`
}

// BuildRules configure skill image builds.
type BuildRules struct {
	SourceBuilds Setting[bool]   `yaml:"source_builds" json:"source_builds"`
	FindLinks    Setting[string] `yaml:"find_links" json:"find_links"`
}

// Grants are the operator's additions and overrides for one skill.
type Grants struct {
	// AllowedTools are added to what the skill declares.
	AllowedTools   Setting[string]   `yaml:"allowed-tools" json:"allowed_tools"`
	SystemPackages Setting[[]string] `yaml:"system_packages" json:"system_packages"`
	PythonPackages Setting[[]string] `yaml:"python_packages" json:"python_packages"`
	// Network, Limits and Profile replace the global rules for this skill.
	Network Setting[string] `yaml:"network" json:"network"`
	Limits  LimitRules      `yaml:"limits" json:"limits"`
	// AllowedDomains are added to the global allowed_domains for this
	// skill.
	AllowedDomains Setting[[]string] `yaml:"allowed_domains" json:"allowed_domains"`
	Profile        Setting[string]   `yaml:"profile" json:"profile"`
	// Secrets the skill gets when it declares them; EgressRules narrow
	// the global egress.rules for its runs.
	Secrets     Setting[[]string]              `yaml:"secrets" json:"secrets"`
	EgressRules Setting[[]egressrule.HTTPRule] `yaml:"egress_rules" json:"egress_rules"`
	// Cache sets this skill's result cache ttl (cache.go).
	Cache CacheRules `yaml:"cache" json:"cache"`

	tools   bashcheck.Tools
	domains egressrule.Allowlist
}

// BuiltinPolicy is the policy when the operator wrote none: the skill's
// values within the absolute bounds, no memory or CPU ceiling but the
// host's, network as the skill declares, Write as allowed-tools declares,
// and a request above a ceiling refused.
func BuiltinPolicy() *Operator {
	o := &Operator{Source: BuiltinSource, Digest: BuiltinSource}
	o.setBuiltins()
	return o
}

// setBuiltins fills every setting the file left out.
func (o *Operator) setBuiltins() {
	l := &o.Limits
	l.Timeout.Default.orBuiltin(Duration(DefaultTimeout))
	l.Timeout.Max.orBuiltin(Duration(MaxTimeout))
	l.Memory.Default.orBuiltin(Size(DefaultMemoryMiB << 20))
	l.CPUs.Default.orBuiltin(Number(DefaultCPUs))
	l.Pids.Default.orBuiltin(Count(DefaultPids))
	l.Pids.Max.orBuiltin(Count(DefaultPids))
	l.Output.Max.orBuiltin(Size(DefaultOutputBytes))
	l.WorkspaceWrite.Max.orBuiltin(Size(DefaultWorkspaceWriteBytes))
	o.OnExceed.orBuiltin(OnExceedRefuse)
	o.Network.orBuiltin(NetworkDeclared)
	o.Egress.setBuiltins()
	o.Workspace.Write.orBuiltin(WriteDeclared)
	o.Sessions.setBuiltins()
	o.Tenants.setBuiltins()
	o.SkillUploads.setBuiltins()
	o.Build.SourceBuilds.orBuiltin(false)
}

// FilePath picks the policy file: flag, else $SANDBOXRUN_POLICY, else
// DefaultPolicyPath when it exists; "" means the built-in policy.
func FilePath(flag string, getenv func(string) string) string {
	if flag != "" {
		return flag
	}
	if env := getenv("SANDBOXRUN_POLICY"); env != "" {
		return env
	}
	if _, err := os.Stat(DefaultPolicyPath); err == nil {
		return DefaultPolicyPath
	}
	return ""
}

// LoadPolicy reads the policy file at path; "" gives BuiltinPolicy.
func LoadPolicy(path string) (*Operator, error) {
	if path == "" {
		return BuiltinPolicy(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w (pass an existing file with --policy or $SANDBOXRUN_POLICY)", ErrPolicyFile, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return ParsePolicy(abs, data)
}

// ParsePolicy reads a policy file's bytes; source names it in errors. Every
// problem is an error naming the line: unknown keys, bad units, a default
// above its ceiling, values outside the absolute bounds.
func ParsePolicy(source string, data []byte) (*Operator, error) {
	o := &Operator{Source: source}
	sum := sha256.Sum256(data)
	o.Digest = hex.EncodeToString(sum[:])
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(o); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w %s: %s", ErrPolicyFile, source, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if errs := o.validate(); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("%w %s: %s", ErrPolicyFile, source, strings.Join(msgs, "; "))
	}
	o.setBuiltins()
	return o, nil
}

// validate checks what the types alone cannot; each error names its line.
func (o *Operator) validate() []error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(o.OnExceed.oneOf("on_exceed", OnExceedClamp, OnExceedRefuse))
	add(o.Network.oneOf("network", NetworkNone, NetworkAllowlist, NetworkDeclared))
	o.domains = parsePolicyDomains("allowed_domains", o.AllowedDomains, add)
	errs = append(errs, o.Egress.validate()...)
	errs = append(errs, o.validateSecrets(os.LookupEnv)...)
	add(o.Workspace.Write.oneOf("workspace.write", WriteReadOnly, WriteDeclared))
	errs = append(errs, o.Sessions.validate()...)
	errs = append(errs, o.Tenants.validate()...)
	errs = append(errs, o.SkillUploads.validate()...)
	errs = append(errs, o.Cache.validate("cache", true)...)
	add(checkProfileSetting("profile", o.RunnerProfile))
	for _, r := range o.Workspace.Roots.Value {
		if !filepath.IsAbs(r) {
			add(fmt.Errorf("line %d: workspace.roots entry %q must be an absolute path", o.Workspace.Roots.Line, r))
		}
	}
	add(o.Limits.validate("limits", nil))
	for _, name := range o.skillNames() {
		g := o.Skills[name]
		if g == nil {
			o.Skills[name] = &Grants{}
			continue
		}
		where := "skills." + name
		errs = append(errs, g.Cache.validate(where+".cache", false)...)
		add(g.Network.oneOf(where+".network", NetworkNone, NetworkAllowlist, NetworkDeclared))
		g.domains = parsePolicyDomains(where+".allowed_domains", g.AllowedDomains, add)
		add(checkProfileSetting(where+".profile", g.Profile))
		add(g.Limits.validate(where+".limits", &o.Limits))
		if g.AllowedTools.Set {
			ts, err := bashcheck.ParseAllowedTools(g.AllowedTools.Value)
			if err != nil {
				add(fmt.Errorf("line %d: %s.allowed-tools: %w", g.AllowedTools.Line, where, err))
			}
			g.tools = ts
		}
		for _, list := range []Setting[[]string]{g.SystemPackages, g.PythonPackages} {
			for _, p := range list.Value {
				if strings.TrimSpace(p) == "" || strings.ContainsAny(p, " \t\r\n'\"\\$`;&|(){}*?#") {
					add(fmt.Errorf("line %d: %s: package %q is not a package name", list.Line, where, p))
				}
			}
		}
	}
	return errs
}

// parsePolicyDomains parses an allowed_domains list, reporting each bad
// entry with its line.
func parsePolicyDomains(where string, s Setting[[]string], add func(error)) egressrule.Allowlist {
	var list egressrule.Allowlist
	for _, e := range s.Value {
		r, err := egressrule.ParseDomainRule(e)
		if err != nil {
			add(fmt.Errorf("line %d: %s: %w", s.Line, where, err))
			continue
		}
		list = append(list, r)
	}
	return list.Normalize()
}

// validate checks the absolute bounds and that each default is within its
// ceiling; global are the file's global rules when r belongs to a skill.
func (r *LimitRules) validate(where string, global *LimitRules) error {
	var errs []error
	if d := r.Timeout.Default; d.Set && (d.Value < Duration(MinTimeout) || d.Value > Duration(MaxTimeout)) {
		errs = append(errs, fmt.Errorf("line %d: %s.timeout.default %s is outside %s–%s", d.Line, where, d.Value, Duration(MinTimeout), Duration(MaxTimeout)))
	}
	if m := r.Timeout.Max; m.Set && (m.Value < Duration(MinTimeout) || m.Value > Duration(MaxTimeout)) {
		errs = append(errs, fmt.Errorf("line %d: %s.timeout.max %s is outside %s–%s", m.Line, where, m.Value, Duration(MinTimeout), Duration(MaxTimeout)))
	}
	for _, s := range []struct {
		name string
		v    Setting[Size]
	}{{"memory.default", r.Memory.Default}, {"memory.max", r.Memory.Max}} {
		if s.v.Set && s.v.Value < Size(MinMemoryMiB<<20) {
			errs = append(errs, fmt.Errorf("line %d: %s.%s %s is below the minimum of %s", s.v.Line, where, s.name, s.v.Value, size.FormatMiB(MinMemoryMiB)))
		}
	}
	if r.Output.Default.Set {
		errs = append(errs, fmt.Errorf("line %d: %s.output takes only max: nobody requests an output cap", r.Output.Default.Line, where))
	}
	if r.WorkspaceWrite.Default.Set {
		errs = append(errs, fmt.Errorf("line %d: %s.workspace_write takes only max", r.WorkspaceWrite.Default.Line, where))
	}
	var g LimitRules
	if global != nil {
		g = *global
	}
	errs = append(errs,
		defaultWithinMax(where+".timeout", r.Timeout, g.Timeout),
		defaultWithinMax(where+".memory", r.Memory, g.Memory),
		defaultWithinMax(where+".cpus", r.CPUs, g.CPUs),
		defaultWithinMax(where+".pids", r.Pids, g.Pids),
	)
	return errors.Join(errs...)
}

func defaultWithinMax[T scalar](where string, r, global Range[T]) error {
	d := r.Default.or(global.Default)
	m := r.Max.or(global.Max)
	if !r.Default.Set && !r.Max.Set {
		return nil
	}
	if d.Set && m.Set && d.Value > m.Value {
		line := d.Line
		if r.Max.Set {
			line = r.Max.Line
		}
		return fmt.Errorf("line %d: %s default %v is above its max %v; lower the default or raise the max", line, where, d.Value, m.Value)
	}
	return nil
}

// skillNames are the skills the policy names, sorted.
func (o *Operator) skillNames() []string {
	names := make([]string, 0, len(o.Skills))
	for name := range o.Skills {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// grants returns the rules for skill, never nil.
func (o *Operator) grants(skill string) *Grants {
	if g := o.Skills[skill]; g != nil {
		return g
	}
	return &Grants{}
}

// ExtraTools are the allowed-tools the policy grants skill, added to what it
// declares.
func (o *Operator) ExtraTools(skill string) bashcheck.Tools { return o.grants(skill).tools }

// ExtraPackages are the system and Python packages the policy adds to
// skill's image.
func (o *Operator) ExtraPackages(skill string) (system, python []string) {
	g := o.grants(skill)
	return g.SystemPackages.Value, g.PythonPackages.Value
}

// SourceBuilds reports whether skill images may build packages from source.
func (o *Operator) SourceBuilds() bool { return o.Build.SourceBuilds.Value }

// FindLinks is the default wheel folder or URL for skill image builds.
func (o *Operator) FindLinks() string { return o.Build.FindLinks.Value }

// OCIRuntime is the engine runtime every sandbox must use, "" for the
// engine's default. A caller asking for another is refused (CheckRuntime).
func (o *Operator) OCIRuntime() string { return o.Runtime.Value }

// BuiltinSource is the Source (and Digest) of the built-in policy, which
// no file holds.
const BuiltinSource = "builtin"

// CheckRuntime refuses a caller's runtime that differs from the policy's.
func (o *Operator) CheckRuntime(requested string) (string, error) {
	want := o.Runtime.Value
	switch {
	case want == "":
		return requested, nil
	case requested == "" || requested == want:
		return want, nil
	}
	return "", where.Errorf("%w: the runtime %q was asked for, but the policy %s (line %d) requires %q; drop --oci-runtime or ask the operator", ErrLimit, requested, where.Path(o.Source), o.Runtime.Line, want)
}

// network reports whether skill gets the network it declares.
func (o *Operator) network(skill string) (string, where.Text) {
	if g := o.grants(skill); g.Network.Set {
		return g.Network.Value, where.Plain(fmt.Sprintf("policy skills.%s.network (line %d)", skill, g.Network.Line))
	}
	return o.Network.Value, o.Network.origin("policy network", o.Source)
}

// WorkspaceWritable decides whether /workspace is writable for a skill whose
// allowed-tools grants Write (declared).
func (o *Operator) WorkspaceWritable(declared bool) bool {
	return declared && o.Workspace.Write.Value != WriteReadOnly
}

// ErrWorkspaceRoot refuses a workspace outside the policy's roots.
var ErrWorkspaceRoot = errors.New("workspace outside the policy's roots")

// CheckWorkspaceRoot refuses resolved, an absolute symlink-free path, when
// the policy lists roots and it is under none of them.
func (o *Operator) CheckWorkspaceRoot(resolved string) error {
	roots := o.Workspace.Roots.Value
	if len(roots) == 0 || resolved == "" {
		return nil
	}
	for _, r := range roots {
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(real, resolved); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return nil
		}
	}
	return where.Errorf("%w: %s is not under %s (policy %s, line %d); pass a --workspace inside one of them", ErrWorkspaceRoot, where.Path(resolved), where.JoinPaths(roots, ", "), where.Path(o.Source), o.Workspace.Roots.Line)
}
