package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/layout"
	"github.com/sandboxrun/sandboxrun/sandbox/warm"
)

// Options are the tunables every backend shares. Each backend's settings
// embed them, so that a field, its default (DefaultOptions) and its check
// (Validate) are written once; the backends' With* options set them.
type Options struct {
	Logger        *slog.Logger
	MaxConcurrent int
	// Version is sandboxrun's, for labels and the default image.
	Version string
	// Image is the default image; empty: the runner image of Version.
	Image string
	// BackstopMargin is how long past a run's own timeout the backend
	// waits before it kills the sandbox itself.
	BackstopMargin time.Duration
	CallTimeout    time.Duration
	InitGrace      time.Duration
	OwnerHost      string
	// WarmSize is the warm pool's size, or its cap with WarmByDemand;
	// 0 is off.
	WarmSize     int
	WarmMaxIdle  time.Duration
	WarmByDemand bool
}

// DefaultOptions are the shared defaults.
func DefaultOptions(ownerHost string) Options {
	return Options{
		Logger:         slog.New(slog.DiscardHandler),
		MaxConcurrent:  2 * runtime.NumCPU(),
		BackstopMargin: 5 * time.Second,
		CallTimeout:    30 * time.Second,
		InitGrace:      2 * time.Second,
		OwnerHost:      ownerHost,
		WarmMaxIdle:    time.Minute,
	}
}

// Validate checks the shared tunables; sandboxes names what the backend
// runs ("containers", "pods") in its messages.
func (o *Options) Validate(sandboxes string) []error {
	var errs []error
	if o.Logger == nil {
		errs = append(errs, errors.New("logger is nil: omit WithLogger to log nothing"))
	}
	if o.MaxConcurrent < 1 {
		errs = append(errs, fmt.Errorf("max concurrent %s is %d: use at least 1", sandboxes, o.MaxConcurrent))
	}
	if o.Image == "" && o.Version == "" {
		errs = append(errs, errors.New("no default image: pass WithVersion (image sandboxrun/runner:<version>) or WithDefaultImage"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"backstop margin", o.BackstopMargin}, {"call timeout", o.CallTimeout}, {"init grace", o.InitGrace},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s is %s: use a positive duration", d.name, d.v))
		}
	}
	if o.WarmSize < 0 || (o.WarmSize > 0 && o.WarmMaxIdle <= 0) {
		errs = append(errs, fmt.Errorf("warm pool of %d %s idle at most %s: use a size of 0 (off) or more, and a positive idle time", o.WarmSize, sandboxes, o.WarmMaxIdle))
	}
	return errs
}

// DefaultImage is Image, or else the runner image of Version.
func (o *Options) DefaultImage() string {
	if o.Image != "" {
		return o.Image
	}
	return layout.RunnerRef(o.Version)
}

// Sizer is the warm pool's sizing policy, nil when the pool is off. now is
// the clock of a pool by demand (nil: time.Now).
func (o *Options) Sizer(now func() time.Time) *warm.Sizer {
	if o.WarmByDemand {
		return warm.ByDemand(o.WarmSize, o.WarmMaxIdle, now)
	}
	return warm.Fixed(o.WarmSize)
}

// Begin is how every backend's Run starts once the spec is checked: it
// waits for one of slots (a run's place under MaxConcurrent), then returns
// the run's Result and end, which the Run defers with its own error: end
// records that error in the Result, when the Result says nothing yet, and
// frees the slot.
func Begin(ctx context.Context, slots chan struct{}, spec *Spec) (res *Result, end func(err *error), err error) {
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("wait for a free sandbox slot: %w", ctx.Err())
	}
	res = NewResult(spec)
	return res, func(err *error) {
		if *err != nil && res.Error == "" {
			res.Error, res.Cause = (*err).Error(), *err
		}
		<-slots
	}, nil
}
