// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package binder

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/runstatus"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/domain/scheduling"
	"github.com/kquant/kquant/internal/logging"
)

// waiting is a run left unbound because other pods hold the GPUs it may use.
type waiting struct {
	run     string
	message string
}

// waitingForGPU are the runs of pending that the pass did not bind because
// the GPUs they may use are busy and at least one of them is allocated to a
// pod other than kquant's (foreign): its target GPU, or every eligible GPU (of
// its target node). Runs held back by their job's maxParallel, or waiting
// only for kquant's own runs, are not waiting for a GPU in this sense.
func waitingForGPU(pending []scheduling.PendingRun, bindings []scheduling.Binding, jobs map[string]*scheduling.JobCapacity,
	busy scheduling.Busy, foreign map[string]string) []waiting {
	if len(foreign) == 0 {
		return nil
	}
	bound := make(map[string]bool, len(bindings))
	for _, b := range bindings {
		bound[b.Run] = true
	}
	var out []waiting
	for i := range pending {
		pr := &pending[i]
		jc := jobs[pr.Job]
		if bound[pr.Name] || jc == nil || jc.Free <= 0 || len(jc.Eligible) == 0 {
			continue
		}
		if pr.TargetGPU != "" {
			if holder, ok := foreign[pr.TargetGPU]; ok {
				out = append(out, waiting{run: pr.Name, message: fmt.Sprintf("GPU %s is allocated to %s; the run waits until it is free", pr.TargetGPU, holder)})
			}
			continue
		}
		if msg, ok := allBusy(pr, jc.Eligible, busy, foreign); ok {
			out = append(out, waiting{run: pr.Name, message: msg})
		}
	}
	return out
}

// allBusy says whether every GPU pr may use is busy with at least one held by
// another pod, and says so.
func allBusy(pr *scheduling.PendingRun, eligible []scheduling.GPU, busy scheduling.Busy, foreign map[string]string) (string, bool) {
	n := 0
	holders := map[string]bool{}
	for _, g := range eligible {
		if pr.TargetNode != "" && g.Node != pr.TargetNode {
			continue
		}
		if !busy.Has(g.UUID) {
			return "", false
		}
		n++
		if h, ok := foreign[g.UUID]; ok {
			holders[h] = true
		}
	}
	if n == 0 || len(holders) == 0 {
		return "", false
	}
	names := slices.Sorted(maps.Keys(holders))
	if len(names) > 3 {
		names = append(names[:3], "…")
	}
	return fmt.Sprintf("all %d eligible GPUs are busy, %d of them allocated to other pods (%v); the run waits for a free GPU", n, len(holders), names), true
}

// clearWait drops the WaitingForGPU reason of a run just bound. Its agent or
// run pod may write the run at once (Running), so a conflict is retried on
// the API server's current run, in whatever phase it is, a few times.
func (r *Reconciler) clearWait(ctx context.Context, run *kquantv1alpha1.QuantRun) error {
	backoff := wait.Backoff{Steps: 5, Duration: 20 * time.Millisecond, Factor: 2}
	return retry.RetryOnConflict(backoff, func() error {
		if run.Status.Reason != kquantv1alpha1.RunReasonWaitingForGPU || run.Status.Phase.IsTerminal() {
			return nil
		}
		err := runstatus.Apply(ctx, r.client, run.DeepCopy(), runstatus.Change{Phase: quantrun.StoredPhase(run)})
		if apierrors.IsConflict(err) {
			fresh := &kquantv1alpha1.QuantRun{}
			if gerr := r.reader.Get(ctx, client.ObjectKeyFromObject(run), fresh); gerr != nil {
				return client.IgnoreNotFound(gerr)
			}
			run = fresh
		}
		return err
	})
}

// writeWaits records WaitingForGPU on the waiting runs whose status does not
// say so yet: one write per run and message, and an Event.
func (r *Reconciler) writeWaits(ctx context.Context, waits []waiting, byName map[string]*kquantv1alpha1.QuantRun) error {
	errs := make([]error, len(waits))
	var g errgroup.Group
	g.SetLimit(BindWriters)
	for i, w := range waits {
		run := byName[w.run]
		if run == nil || run.Status.Reason == kquantv1alpha1.RunReasonWaitingForGPU && run.Status.Message == w.message {
			continue
		}
		g.Go(func() error {
			first := run.Status.Reason != kquantv1alpha1.RunReasonWaitingForGPU
			err := runstatus.Apply(ctx, r.client, run.DeepCopy(), runstatus.Change{
				Phase: kquantv1alpha1.RunPhasePending, Reason: kquantv1alpha1.RunReasonWaitingForGPU, Message: w.message})
			if err != nil {
				errs[i] = client.IgnoreNotFound(err)
				return nil
			}
			if first {
				r.recorder.Eventf(run, nil, corev1.EventTypeNormal, kquantv1alpha1.RunReasonWaitingForGPU, "Bind", "%s", w.message)
			}
			logging.FromContext(ctx).V(logging.Debug).Info("Run waits for a GPU", "quantRun", client.ObjectKeyFromObject(run), "message", w.message)
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}
