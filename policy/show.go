package policy

import (
	"fmt"
	"strings"
)

// Entry is one effective setting of a policy, for `policy show`.
type Entry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// From is "line N" of the policy file, or "builtin default".
	From string `json:"from"`
}

// Entries lists every setting the policy has, with where it came from.
// Limits without a ceiling show "none" (the host's size still bounds them).
func (o *Operator) Entries() []Entry {
	var out []Entry
	limits := func(prefix string, r *LimitRules, all bool) {
		add := func(key string, has bool, value fmt.Stringer, from string) {
			switch {
			case has:
				out = append(out, Entry{prefix + key, value.String(), from})
			case all:
				out = append(out, Entry{prefix + key, "none", "builtin default"})
			}
		}
		add("timeout.default", r.Timeout.Default.Has(), r.Timeout.Default.Value, r.Timeout.Default.from())
		add("timeout.max", r.Timeout.Max.Has(), r.Timeout.Max.Value, r.Timeout.Max.from())
		add("memory.default", r.Memory.Default.Has(), r.Memory.Default.Value, r.Memory.Default.from())
		add("memory.max", r.Memory.Max.Has(), r.Memory.Max.Value, r.Memory.Max.from())
		add("cpus.default", r.CPUs.Default.Has(), r.CPUs.Default.Value, r.CPUs.Default.from())
		add("cpus.max", r.CPUs.Max.Has(), r.CPUs.Max.Value, r.CPUs.Max.from())
		add("pids.default", r.Pids.Default.Has(), r.Pids.Default.Value, r.Pids.Default.from())
		add("pids.max", r.Pids.Max.Has(), r.Pids.Max.Value, r.Pids.Max.from())
		add("output.max", r.Output.Max.Has(), r.Output.Max.Value, r.Output.Max.from())
		add("workspace_write.max", r.WorkspaceWrite.Max.Has(), r.WorkspaceWrite.Max.Value, r.WorkspaceWrite.Max.from())
	}
	str := func(key string, s Setting[string], empty string) {
		v := s.Value
		if v == "" {
			v = empty
		}
		out = append(out, Entry{key, v, s.from()})
	}
	limits("limits.", &o.Limits, true)
	str("on_exceed", o.OnExceed, "")
	str("network", o.Network, "")
	out = append(out,
		Entry{"allowed_domains", listOr(o.domains.Strings(), "none"), o.AllowedDomains.from()},
		Entry{"egress.allow_cidrs", listOr(o.Egress.AllowCIDRs.Value, "none"), o.Egress.AllowCIDRs.from()},
		Entry{"egress.max_connections", o.Egress.MaxConnections.Value.String(), o.Egress.MaxConnections.from()},
		Entry{"egress.max_bytes", o.Egress.MaxBytes.Value.String(), o.Egress.MaxBytes.from()},
		Entry{"egress.idle_timeout", o.Egress.IdleTimeout.Value.String(), o.Egress.IdleTimeout.from()},
	)
	out = append(out, o.secretEntries()...)
	str("workspace.write", o.Workspace.Write, "")
	out = append(out, Entry{"workspace.roots", listOr(o.Workspace.Roots.Value, "any"), o.Workspace.Roots.from()})
	out = append(out, o.Sessions.entries()...)
	out = append(out, o.Tenants.entries()...)
	out = append(out, o.SkillUploads.entries()...)
	out = append(out, o.cacheEntries()...)
	str("runtime", o.Runtime, "engine default")
	str("profile", o.RunnerProfile, "none (the plain runner)")
	out = append(out, Entry{"build.source_builds", fmt.Sprint(o.Build.SourceBuilds.Value), o.Build.SourceBuilds.from()})
	str("build.find_links", o.Build.FindLinks, "none")
	usr := Entry{"docker.usr_volumes", fmt.Sprint(o.Docker.UsrVolumesOn()), "builtin default"}
	if o.Docker.UsrVolumes != nil {
		usr.From = fmt.Sprintf("line %d", o.Docker.Line)
	}
	out = append(out, usr)
	wp := o.Docker.WarmPool
	wpMax := Entry{"docker.warm_pool.max", fmt.Sprint(wp.MaxOrDefault()), "builtin default"}
	if wp.Max != nil {
		wpMax.From = fmt.Sprintf("line %d", wp.Line)
	}
	wpIdle := Entry{"docker.warm_pool.idle", wp.IdleOrDefault().String(), "builtin default"}
	if wp.Idle != 0 {
		wpIdle.From = fmt.Sprintf("line %d", wp.Line)
	}
	out = append(out, wpMax, wpIdle)
	for _, name := range o.skillNames() {
		g := o.Skills[name]
		p := "skills." + name + "."
		if g.AllowedTools.Set {
			out = append(out, Entry{p + "allowed-tools", g.AllowedTools.Value, g.AllowedTools.from()})
		}
		if g.SystemPackages.Set {
			out = append(out, Entry{p + "system_packages", listOr(g.SystemPackages.Value, "none"), g.SystemPackages.from()})
		}
		if g.PythonPackages.Set {
			out = append(out, Entry{p + "python_packages", listOr(g.PythonPackages.Value, "none"), g.PythonPackages.from()})
		}
		if g.Network.Set {
			out = append(out, Entry{p + "network", g.Network.Value, g.Network.from()})
		}
		if g.AllowedDomains.Set {
			out = append(out, Entry{p + "allowed_domains", listOr(g.domains.Strings(), "none"), g.AllowedDomains.from()})
		}
		if g.Profile.Set {
			out = append(out, Entry{p + "profile", g.Profile.Value, g.Profile.from()})
		}
		limits(p+"limits.", &g.Limits, false)
		out = append(out, g.secretEntries(p)...)
	}
	return out
}

func listOr(list []string, empty string) string {
	if len(list) == 0 {
		return empty
	}
	return strings.Join(list, ", ")
}
