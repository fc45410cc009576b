package policy

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDefaultLimits(t *testing.T) {
	require.Equal(t, Limits{
		Timeout:     30 * time.Second,
		TimeoutSec:  30,
		MemoryBytes: 512 << 20,
		CPUs:        1.0,
		Pids:        256,
		OutputBytes: 10 << 20,
		TmpBytes:    64 << 20,
		Network:     false,

		WorkspaceWriteBytes: 1 << 30,
	}, DefaultLimits())
}

func TestEffectiveLimits(t *testing.T) {
	withDefaults := func(edit func(*Limits)) Limits {
		l := DefaultLimits()
		edit(&l)
		l.TimeoutSec = l.Timeout.Seconds()
		return l
	}
	tests := []struct {
		name  string
		skill SkillLimits
		req   Request
		want  Limits
	}{
		{"nothing declared", SkillLimits{}, Request{}, DefaultLimits()},
		{"skill raises timeout", SkillLimits{Timeout: 300 * time.Second}, Request{},
			withDefaults(func(l *Limits) { l.Timeout = 300 * time.Second })},
		{"skill lowers timeout", SkillLimits{Timeout: 5 * time.Second}, Request{},
			withDefaults(func(l *Limits) { l.Timeout = 5 * time.Second })},
		{"skill memory", SkillLimits{MemoryMiB: 2048}, Request{},
			withDefaults(func(l *Limits) { l.MemoryBytes = 2048 << 20 })},
		{"skill cpus", SkillLimits{CPUs: 2.5}, Request{},
			withDefaults(func(l *Limits) { l.CPUs = 2.5 })},
		{"skill network", SkillLimits{Network: true}, Request{},
			withDefaults(func(l *Limits) { l.Network = true })},
		{"skill bounds inclusive", SkillLimits{Timeout: 600 * time.Second, MemoryMiB: 16}, Request{},
			withDefaults(func(l *Limits) { l.Timeout = 600 * time.Second; l.MemoryBytes = 16 << 20 })},
		{"request lowers defaults", SkillLimits{}, Request{Timeout: 10 * time.Second, MemoryMiB: 256, CPUs: 0.5},
			withDefaults(func(l *Limits) { l.Timeout = 10 * time.Second; l.MemoryBytes = 256 << 20; l.CPUs = 0.5 })},
		{"request lowers skill", SkillLimits{Timeout: 300 * time.Second, MemoryMiB: 2048, CPUs: 4}, Request{Timeout: 120 * time.Second, MemoryMiB: 1024, CPUs: 2},
			withDefaults(func(l *Limits) { l.Timeout = 120 * time.Second; l.MemoryBytes = 1024 << 20; l.CPUs = 2 })},
		{"request equal to ceiling", SkillLimits{Timeout: 60 * time.Second}, Request{Timeout: 60 * time.Second},
			withDefaults(func(l *Limits) { l.Timeout = 60 * time.Second })},
		{"request raises default timeout", SkillLimits{}, Request{Timeout: 60 * time.Second},
			withDefaults(func(l *Limits) { l.Timeout = 60 * time.Second })},
		{"request raises skill values", SkillLimits{Timeout: 45 * time.Second, MemoryMiB: 256}, Request{Timeout: 46 * time.Second, MemoryMiB: 512, CPUs: 1.5},
			withDefaults(func(l *Limits) { l.Timeout = 46 * time.Second; l.MemoryBytes = 512 << 20; l.CPUs = 1.5 })},
		{"fractional timeout", SkillLimits{}, Request{Timeout: 1500 * time.Millisecond},
			withDefaults(func(l *Limits) { l.Timeout = 1500 * time.Millisecond })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BuiltinPolicy().Decide("s", tt.skill, tt.req)
			require.NoError(t, err)
			got.Sources, got.Clamped = nil, nil
			require.Equal(t, tt.want, got)
			require.InDelta(t, got.Timeout.Seconds(), got.TimeoutSec, 1e-9)
		})
	}
}

func TestEffectiveLimitsRefused(t *testing.T) {
	tests := []struct {
		name  string
		skill SkillLimits
		req   Request
		msg   []string
	}{
		{"request above the absolute timeout", SkillLimits{}, Request{Timeout: 601 * time.Second},
			[]string{"601 s", "outside 1 s–600 s"}},
		{"several at once", SkillLimits{}, Request{Timeout: 700 * time.Second, MemoryMiB: 8},
			[]string{"timeout", "memory"}},
		{"request timeout too small", SkillLimits{}, Request{Timeout: 500 * time.Millisecond},
			[]string{"0.5 s", "outside 1 s–600 s"}},
		{"request negative timeout", SkillLimits{}, Request{Timeout: -time.Second},
			[]string{"outside"}},
		{"request memory too small", SkillLimits{}, Request{MemoryMiB: 8},
			[]string{"8MiB", "16MiB or more"}},
		{"request negative cpus", SkillLimits{}, Request{CPUs: -1},
			[]string{"above 0"}},
		{"request NaN cpus", SkillLimits{}, Request{CPUs: math.NaN()},
			[]string{"NaN"}},
		{"skill timeout too long", SkillLimits{Timeout: 601 * time.Second}, Request{},
			[]string{"max_execution_time is 601 s", "SKILL.md"}},
		{"skill timeout too short", SkillLimits{Timeout: 999 * time.Millisecond}, Request{},
			[]string{"max_execution_time"}},
		{"skill memory too small", SkillLimits{MemoryMiB: 15}, Request{},
			[]string{"max_memory is 15MiB"}},
		{"skill memory overflow", SkillLimits{MemoryMiB: math.MaxInt64}, Request{},
			[]string{"max_memory"}},
		{"skill negative cpus", SkillLimits{CPUs: -0.5}, Request{},
			[]string{"max_cpus is -0.5"}},
		{"skill infinite cpus", SkillLimits{CPUs: math.Inf(1)}, Request{},
			[]string{"max_cpus"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BuiltinPolicy().Decide("s", tt.skill, tt.req)
			require.ErrorIs(t, err, ErrLimit)
			require.Equal(t, Limits{}, got)
			for _, m := range tt.msg {
				require.Contains(t, err.Error(), m)
			}
		})
	}
}

func TestSkillLimitsValidate(t *testing.T) {
	require.NoError(t, SkillLimits{}.Validate())
	require.NoError(t, SkillLimits{Timeout: time.Second, MemoryMiB: 16, CPUs: 0.1}.Validate())
	require.ErrorIs(t, SkillLimits{CPUs: -1}.Validate(), ErrLimit)
}
