package policy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// OCIRules tune the oci backend, which drives an OCI runtime directly
// (sandbox/oci):
//
//	backend: oci
//	oci:
//	  runtime: crun                  # runc (default), crun or runsc
//	  state: /var/lib/sandboxrun/oci # unpacked images and bundles; this by default
type OCIRules struct {
	// Runtime is runc, crun or runsc; empty means runc.
	Runtime string `yaml:"runtime" json:"runtime,omitempty"`
	// State is the backend's state folder, an absolute path; empty means
	// the backend's default.
	State string `yaml:"state" json:"state,omitempty"`
	Line  int    `yaml:"-" json:"-"`
}

// OCIRuntimes are the runtimes oci.runtime accepts.
var OCIRuntimes = []string{"runc", "crun", "runsc"}

var ociKeys = []string{"runtime", "state"}

// UnmarshalYAML refuses unknown keys, a runtime it does not know and a
// state folder that is not an absolute, clean path.
func (o *OCIRules) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "oci", ociKeys); err != nil {
		return err
	}
	type plain OCIRules
	var v plain
	if err := n.Decode(&v); err != nil {
		return fmt.Errorf("line %d: oci: %w", n.Line, err)
	}
	switch {
	case v.Runtime != "" && !slices.Contains(OCIRuntimes, v.Runtime):
		return fmt.Errorf("line %d: oci.runtime %q: use one of %s", n.Line, v.Runtime, strings.Join(OCIRuntimes, ", "))
	case v.State != "" && (!filepath.IsAbs(v.State) || filepath.Clean(v.State) != v.State):
		return fmt.Errorf("line %d: oci.state %q: give an absolute, clean folder", n.Line, v.State)
	case strings.ContainsAny(v.State, ":,"):
		return fmt.Errorf("line %d: oci.state %q contains ':' or ',', which overlay mounts cannot take: choose another folder", n.Line, v.State)
	}
	*o = OCIRules(v)
	o.Line = n.Line
	return nil
}
