package images

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// A failed build tells the step by its short name and exit status, so a
// caller tells a skill's impossible declaration from the server's trouble.
func TestSkillBuildErrorByDeclaration(t *testing.T) {
	steps := []buildStep{{name: "apt-get update"}, {name: "apt-get install"}, {name: "venv"}, {name: "pip install"}}
	exited := &CommandError{Command: []string{"build container", "c"}, ExitCode: 1, Err: errors.New("exit status 1")}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		step   int // -1: the script had not started
		ctx    context.Context
		err    error
		want   bool
		exitIs int
	}{
		{name: "pip found no such package", step: 3, ctx: context.Background(), err: exited, want: true, exitIs: 1},
		{name: "apt found no such package", step: 1, ctx: context.Background(), err: exited, want: true, exitIs: 1},
		{name: "apt-get update: the server's network", step: 0, ctx: context.Background(), err: exited, exitIs: 1},
		{name: "the container did not start", step: -1, ctx: context.Background(), err: exited},
		{name: "pip cut short", step: 3, ctx: cancelled, err: exited},
		{name: "the engine went away during pip", step: 3, ctx: context.Background(), err: errors.New("engine gone")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newStepTracker(newReporter(&bytes.Buffer{}, nil), steps)
			tr.current = tc.step
			var be *SkillBuildError
			require.ErrorAs(t, tr.failure(tc.ctx, skillPlan{opts: SkillOptions{Skill: "s"}}, tc.err), &be)
			require.Equal(t, tc.want, be.ByDeclaration())
			require.Equal(t, tc.exitIs, be.ExitCode)
			if tc.step >= 0 {
				require.Equal(t, steps[tc.step].name, be.StepName)
			}
		})
	}
}
