package sandboxrun_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends/dockerbackend"
	"github.com/sandboxrun/sandboxrun/policy"
)

// The README's library example. It is compiled with the tests but not run:
// it needs a Docker engine. The Service links no backend of its own:
// Backend names the one to build on first use, here the host's Docker
// engine (dockerbackend.New links no Kubernetes package; backends.New
// picks Docker or Kubernetes as the policy says).
func Example() {
	ctx := context.Background()
	pol, err := policy.LoadPolicy("examples/policy-agent-host.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	svc, err := sandboxrun.New(sandboxrun.Config{
		SkillRoots:    []string{"skills"},
		Policy:        pol,
		MaxConcurrent: 8,
		WarmPool:      4,
		WarmIdle:      time.Minute,
		Logger:        slog.Default(),
		Backend:       dockerbackend.New,
		Images:        dockerbackend.Images(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer svc.Close()

	res, err := svc.RunScript(ctx, "data-analysis", "scripts/stats.py", sandboxrun.Request{
		Args: []byte(`{"columns": ["price"]}`),
	})
	if errors.Is(err, sandboxrun.ErrRefused) {
		fmt.Println("refused:", err) // policy said no; nothing was started
		return
	}
	if err != nil {
		fmt.Println(err) // the environment failed; a failed script is a Result
		return
	}
	fmt.Println(res.ExitCode, string(res.Output))
}
