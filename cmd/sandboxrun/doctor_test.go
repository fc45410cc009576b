package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/doctor"
)

func TestDoctorReportAndExit(t *testing.T) {
	ok := doctor.Check{Area: doctor.AreaHost, Name: "engine", Status: doctor.Pass, Reason: "Docker 27"}
	warn := doctor.Check{Area: doctor.AreaHost, Name: "lsm", Status: doctor.Warn, Reason: "none", Fix: "enable AppArmor"}
	broken := doctor.Check{Area: doctor.AreaIsolation, Name: "user", Status: doctor.Fail, Reason: "uid 0", Fix: "run unprivileged"}
	missing := doctor.Check{Area: doctor.AreaHost, Name: "runner_image", Status: doctor.Fail, Reason: "absent", Fix: "build it"}
	skipped := doctor.Check{Area: doctor.AreaIsolation, Name: "probe", Status: doctor.Skip, Reason: "no engine", Fix: "start it"}

	rep := &doctor.Report{Backend: "docker", Checks: []doctor.Check{ok, warn, broken}}
	var out bytes.Buffer
	require.NoError(t, printReport(&out, rep))
	require.Equal(t, `PASS  host       engine  Docker 27
WARN  host       lsm     none
                         fix: enable AppArmor
FAIL  isolation  user    uid 0
                         fix: run unprivileged
3 checks (backend docker): 1 pass, 1 warn, 1 fail, 0 not checked
`, out.String())

	for _, tc := range []struct {
		checks []doctor.Check
		code   int
	}{
		{[]doctor.Check{ok, warn}, exitOK},
		{[]doctor.Check{ok, broken, missing}, exitIsolationFailed},
		{[]doctor.Check{ok, missing}, exitEnv},
		{[]doctor.Check{ok, skipped}, exitEnv},
	} {
		require.Equal(t, tc.code, codeOf(doctorExit(&doctor.Report{Checks: tc.checks})))
	}
}
