package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOCIRules(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       BackendRules
		err        string
	}{
		{name: "oci defaults", yaml: "backend: oci\n", want: BackendRules{Backend: Backend{Name: "oci", Line: 1}}},
		{name: "oci full", yaml: "backend: oci\noci:\n  runtime: crun\n  state: /srv/sandboxrun-oci\n",
			want: BackendRules{Backend: Backend{Name: "oci", Line: 1}, OCI: OCIRules{Runtime: "crun", State: "/srv/sandboxrun-oci", Line: 3}}},
		{name: "runsc", yaml: "oci:\n  runtime: runsc\n", want: BackendRules{OCI: OCIRules{Runtime: "runsc", Line: 2}}},
		{name: "unknown runtime", yaml: "oci:\n  runtime: youki\n", err: `line 2: oci.runtime "youki": use one of runc, crun, runsc`},
		{name: "runtime path", yaml: "oci:\n  runtime: /tmp/runc\n", err: `oci.runtime "/tmp/runc"`},
		{name: "relative state", yaml: "oci:\n  state: var/oci\n", err: "absolute, clean folder"},
		{name: "unclean state", yaml: "oci:\n  state: /var/../oci\n", err: "absolute, clean folder"},
		{name: "state with a colon", yaml: "oci:\n  state: /var/a:b\n", err: "contains ':' or ','"},
		{name: "unknown key", yaml: "oci:\n  root: /x\n", err: `line 2: oci: unknown key "root" (known: [runtime state])`},
		{name: "not a mapping", yaml: "oci: runc\n", err: "oci: expected a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParsePolicy("p.yaml", []byte(tt.yaml))
			if tt.err != "" {
				require.ErrorIs(t, err, ErrPolicyFile)
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, o.BackendRules)
		})
	}
}
