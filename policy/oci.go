package policy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// OCIRules tune the oci backend, which drives an OCI runtime directly
// (sandbox/oci):
//
//	backend: oci
//	oci:
//	  runtime: crun                  # runc (default), crun or runsc
//	  state: /var/lib/sandboxrun/oci # unpacked images and bundles; this by default
//	  warm: 2                        # containers started ahead; 0 (off) when omitted
//	  warm_idle: 5m                  # how long a warm container may wait; default 5m
type OCIRules struct {
	// Runtime is runc, crun or runsc; empty means runc.
	Runtime string `yaml:"runtime" json:"runtime,omitempty"`
	// State is the backend's state folder, an absolute path; empty means
	// the backend's default.
	State string `yaml:"state" json:"state,omitempty"`
	// Warm is the size of the warm pool (sandbox/oci WithWarmPool); 0 is
	// off.
	Warm int `yaml:"warm" json:"warm,omitempty"`
	// WarmIdle is how long a warm container may wait for its run; zero
	// means DefaultWarmIdle.
	WarmIdle Duration `yaml:"warm_idle" json:"warm_idle,omitempty"`
	Line     int      `yaml:"-" json:"-"`
}

// WarmIdleOrDefault is WarmIdle, or DefaultWarmIdle when it was not set.
func (o OCIRules) WarmIdleOrDefault() time.Duration {
	if o.WarmIdle == 0 {
		return DefaultWarmIdle
	}
	return time.Duration(o.WarmIdle)
}

// OCIRuntimes are the runtimes oci.runtime accepts.
var OCIRuntimes = []string{"runc", "crun", "runsc"}

var ociKeys = []string{"runtime", "state", "warm", "warm_idle"}

// UnmarshalYAML refuses unknown keys, a runtime it does not know and a
// state folder that is not an absolute, clean path.
func (o *OCIRules) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "oci", ociKeys); err != nil {
		return err
	}
	type plain OCIRules
	var v plain
	if err := n.Decode(&v); err != nil {
		return inSection(n, "oci", err)
	}
	switch {
	case v.Runtime != "" && !slices.Contains(OCIRuntimes, v.Runtime):
		return fmt.Errorf("line %d: oci.runtime %q: use one of %s", n.Line, v.Runtime, strings.Join(OCIRuntimes, ", "))
	case v.State != "" && (!filepath.IsAbs(v.State) || filepath.Clean(v.State) != v.State):
		return fmt.Errorf("line %d: oci.state %q: give an absolute, clean folder", n.Line, v.State)
	case strings.ContainsAny(v.State, ":,"):
		return fmt.Errorf("line %d: oci.state %q contains ':' or ',', which overlay mounts cannot take: choose another folder", n.Line, v.State)
	case v.Warm < 0 || v.Warm > MaxWarm:
		return fmt.Errorf("line %d: oci.warm %d: use 0 (off) to %d containers", n.Line, v.Warm, MaxWarm)
	case time.Duration(v.WarmIdle) > MaxWarmIdle:
		return fmt.Errorf("line %d: oci.warm_idle %s: use at most %s", n.Line, v.WarmIdle, MaxWarmIdle)
	}
	*o = OCIRules(v)
	o.Line = n.Line
	return nil
}
