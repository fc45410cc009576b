//go:build kube

package kube

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	kubebackend "github.com/sandboxrun/sandboxrun/sandbox/kube"
	"github.com/sandboxrun/sandboxrun/sandboxtest"
)

// When the probe cannot run (here: a runtime class the cluster does not
// have), isolation is unproven and runs without network are refused
// before any sandbox pod exists.
func TestNoNetworkFailsClosedWhenUnproven(t *testing.T) {
	cfg, err := kubebackend.RESTConfig(os.Getenv("SANDBOXRUN_KUBECONFIG"))
	require.NoError(t, err)
	k, err := kubebackend.New(kubebackend.WithRESTConfig(cfg), kubebackend.WithNamespace(runner.Namespace()),
		kubebackend.WithVersion(sandboxrun.Version), kubebackend.WithDefaultImage(sandboxrun.RunnerImage()),
		kubebackend.WithRuntimeClass("no-such-runtime-class"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := k.Run(ctx, sandbox.Spec{
		Skill: "t", SkillDir: sandboxtest.HostSkillDir(t, nil),
		Argv: []string{"true"}, Limits: sandboxtest.DefaultLimits(),
	})
	require.ErrorIs(t, err, kubebackend.ErrNetworkNotIsolated)
	require.Nil(t, res)
}
