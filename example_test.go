package sandboxrun_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/skill"
)

// The README's library example. It is compiled with the tests but not run:
// it needs a Docker engine.
func Example() {
	ctx := context.Background()
	runner, err := sandbox.NewDocker(
		sandbox.WithVersion(sandboxrun.Version),
		sandbox.WithMaxConcurrent(8),
		sandbox.WithWarmPool(4, time.Minute),
		sandbox.WithLogger(slog.Default()),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer runner.Close()

	sk, err := skill.Load("skills/data-analysis")
	if err != nil {
		fmt.Println(err)
		return
	}
	image, err := sandboxrun.ImageFor(ctx, sk, sandboxrun.BuildOptions{Lookup: runner.CheckImage})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := sandboxrun.PrepareScript(sk, "scripts/stats.py", sandboxrun.Request{
		Args:  []byte(`{"columns": ["price"]}`),
		Image: image,
	})
	if errors.Is(err, sandboxrun.ErrRefused) {
		fmt.Println("refused:", err) // policy said no; nothing was started
		return
	}
	res, err := runner.Run(ctx, p.Spec)
	if err != nil {
		fmt.Println(err) // the environment failed; a failed script is a Result
		return
	}
	fmt.Println(res.ExitCode, string(res.Output))
}
