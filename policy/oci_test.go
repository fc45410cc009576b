package policy

import (
	"testing"
	"time"

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
		{name: "warm pool", yaml: "oci:\n  warm: 4\n  warm_idle: 90s\n", want: BackendRules{OCI: OCIRules{Warm: 4, WarmIdle: Duration(90 * time.Second), Line: 2}}},
		{name: "warm too large", yaml: "oci:\n  warm: 65\n", err: "oci.warm 65: use 0 (off) to 64 containers"},
		{name: "warm idle too long", yaml: "oci:\n  warm_idle: 2h\n", err: "oci.warm_idle 7200s: use at most 1h0m0s"},
		{name: "unknown key", yaml: "oci:\n  root: /x\n", err: `line 2: oci: unknown key "root" (known: [runtime state warm warm_idle])`},
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
	require.Equal(t, DefaultWarmIdle, OCIRules{}.WarmIdleOrDefault())
}
