package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Reap removes the sandboxes whose owner is gone (and, with opts.Grace,
// those older than it): the container, its cgroup and its bundle. Every
// bundle carries its owner in config.json's annotations, the labels of the
// other backends.
func (r *Runner) Reap(ctx context.Context, opts sandbox.ReapOptions) ([]sandbox.Reaped, error) {
	host := opts.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	entries, err := os.ReadDir(r.bundles)
	if err != nil {
		return nil, fmt.Errorf("list sandbox bundles: %w", err)
	}
	var reaped []sandbox.Reaped
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), containerPrefix) {
			continue
		}
		b := &bundle{id: e.Name(), dir: filepath.Join(r.bundles, e.Name())}
		labels := bundleLabels(b.dir)
		created, _ := time.Parse(time.RFC3339, labels[sandbox.LabelCreated])
		if created.IsZero() {
			if fi, err := e.Info(); err == nil {
				created = fi.ModTime() // a bundle cut short before its config
			}
		}
		age := r.now().Sub(created)
		reason := ""
		if pid, goneOwner := sandbox.OwnerGone(labels, host, sandbox.ProcessAlive); goneOwner {
			reason = fmt.Sprintf("owner process %d is gone", pid)
		} else if !opts.OnlyDeadOwners && opts.Grace > 0 && age > opts.Grace {
			reason = fmt.Sprintf("older than %s", opts.Grace)
		}
		if reason == "" {
			continue
		}
		rp := sandbox.Reaped{ID: b.id, Name: b.id, RunID: labels[sandbox.LabelRunID], Skill: labels[sandbox.LabelSkill], Age: age, Reason: reason}
		if !opts.DryRun {
			if err := r.remove(ctx, b, true); err != nil {
				errs = append(errs, err)
			} else {
				rp.Removed = true
			}
		}
		reaped = append(reaped, rp)
	}
	return reaped, errors.Join(errs...)
}

// bundleLabels are the annotations of the bundle's config.json; none when
// it cannot be read.
func bundleLabels(dir string) map[string]string {
	b, err := os.ReadFile(filepath.Join(dir, configFile))
	if err != nil {
		return nil
	}
	var cfg specs.Spec
	if json.Unmarshal(b, &cfg) != nil {
		return nil
	}
	return cfg.Annotations
}
