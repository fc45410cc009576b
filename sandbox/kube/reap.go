package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Reap finds the runner namespace's sandbox Pods whose owner process on
// this host is gone (or, with Grace, that are older than Grace) and
// deletes them at once. Pods that disappear meanwhile are not errors.
// Only Pods labelled io.sandboxrun.managed=true are considered, and the
// isolation probe's control Pods (io.sandboxrun.managed=probe-control).
func (k *Runner) Reap(ctx context.Context, opts sandbox.ReapOptions) ([]sandbox.Reaped, error) {
	if opts.Host == "" {
		opts.Host = k.ownerHost
	}
	cctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	list, err := k.client.Pods(k.namespace).List(cctx, metav1.ListOptions{
		LabelSelector: sandbox.LabelManaged + " in (true," + controlManaged + ")",
	})
	cancel()
	if err != nil {
		return nil, apiError("list sandbox pods", err)
	}
	now := k.now()
	var out []sandbox.Reaped
	var errs []error
	for _, p := range list.Items {
		if m := p.Labels[sandbox.LabelManaged]; m != "true" && m != controlManaged {
			continue
		}
		created := p.CreationTimestamp.Time
		if t, err := time.Parse(time.RFC3339, p.Annotations[sandbox.LabelCreated]); err == nil {
			created = t
		}
		r := sandbox.Reaped{
			ID: string(p.UID), Name: p.Name,
			RunID: p.Annotations[sandbox.LabelRunID], Skill: p.Annotations[sandbox.LabelSkill],
			Age: now.Sub(created).Round(time.Second),
		}
		pid, gone := sandbox.OwnerGone(p.Labels, opts.Host, sandbox.ProcessAlive)
		switch {
		case gone:
			r.Reason = fmt.Sprintf("owner process %d on %s is gone", pid, opts.Host)
		case !opts.OnlyDeadOwners && opts.Grace > 0 && now.Sub(created) > opts.Grace:
			r.Reason = fmt.Sprintf("older than %s", opts.Grace)
		default:
			continue
		}
		if !opts.DryRun {
			if err := k.deletePod(ctx, p.Name, 0); err != nil {
				errs = append(errs, err)
			} else {
				r.Removed = true
			}
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}
