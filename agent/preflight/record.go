// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package preflight

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/runstatus"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	"github.com/kquant/kquant/internal/logging"
	"github.com/kquant/kquant/internal/runoutcome"
)

// FieldManager is the preflight's field manager on the QuantRuns it
// records.
const FieldManager = apply.ManagerPreflight

// ReportingController names the preflight as the source of its Events.
const ReportingController = "kquant.dev/preflight"

// Event reasons, one per verdict: EventReasonPrefix + the verdict
// (PreflightPass, PreflightWarn, PreflightSkip, PreflightFail).
const EventReasonPrefix = "Preflight"

// Recorder records a preflight's checks through the API with the pod's own
// service account, as far as it may: each check as a QuantRun labelled
// v1alpha1.LabelPreflight, and the verdict as an Event on the pod. A write
// that the API server refuses for want of permission is logged once, and
// the preflight goes on: its termination message carries the verdict
// anyway. A Recorder is used by one preflight, from one goroutine.
type Recorder struct {
	Client client.Client
	// runsRefused and eventsRefused are set by the first refusal, so that
	// later checks do not ask again.
	runsRefused, eventsRefused bool
}

// run records c as a finished QuantRun and returns its name; "" when none
// was written.
func (r *Recorder) run(ctx context.Context, opts Options, c Check) string {
	if r == nil || r.runsRefused || opts.Pod.Name == "" {
		return ""
	}
	log := logging.FromContext(ctx)
	var recipe Recipe
	for _, rc := range opts.Recipes {
		if rc.Name == c.Recipe {
			recipe = rc
		}
	}
	run := opts.run(recipe, v1alpha1.GPU{UUID: c.GPU})
	run.Name = ""
	run.GenerateName = generateName(opts.Pod.Name)
	run.Labels = map[string]string{v1alpha1.LabelPreflight: "true"}
	if opts.Pod.UID != "" {
		// The manager never deletes a preflight record (it never sees one):
		// the garbage collector deletes it with its pod.
		run.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: opts.Pod.Name, UID: opts.Pod.UID}}
	}
	if err := r.Client.Create(ctx, run); err != nil {
		r.runsRefused = r.refused(ctx, err, "QuantRuns")
		if !r.runsRefused {
			log.Error(err, "Recording a check as a QuantRun failed", "recipe", c.Recipe, "gpu", c.GPU)
		}
		return ""
	}
	now := metav1.NewTime(opts.Clock.Now())
	st := runstatus.Status{
		Phase: v1alpha1.RunPhaseSucceeded, AgentID: v1alpha1.RunPodAgentID(opts.Pod.Name, opts.Pod.UID),
		StartTime: &now, CompletionTime: &now, AllocatedGPU: &v1alpha1.AllocatedGPU{UUID: c.GPU},
		Results: c.Results, Message: c.Message,
	}
	if c.Results == nil {
		st.Phase, st.Reason = v1alpha1.RunPhaseFailed, c.Reason
	}
	if _, err := runstatus.Apply(ctx, r.Client, FieldManager, run, st); err != nil {
		r.runsRefused = r.refused(ctx, err, "QuantRun status")
		if !r.runsRefused {
			log.Error(err, "Recording a check's result failed", "quantRun", run.Name)
		}
	}
	return run.Name
}

// event records the verdict as an Event on the pod.
func (r *Recorder) event(ctx context.Context, pod Pod, o Outcome) {
	if r == nil || r.eventsRefused || pod.Name == "" {
		return
	}
	typ := corev1.EventTypeNormal
	if o.Verdict != v1alpha1.VerdictPass {
		typ = corev1.EventTypeWarning
	}
	e := &eventsv1.Event{
		// Named as client-go's recorder names Events (a generateName may
		// not end in a dot).
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, o.CompletionTime.UnixNano()), Namespace: pod.Namespace},
		EventTime:  metav1.NewMicroTime(o.CompletionTime.Time),
		Regarding: corev1.ObjectReference{
			APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		},
		ReportingController: ReportingController, ReportingInstance: pod.Name,
		Action: "Preflight", Reason: EventReasonPrefix + string(o.Verdict), Type: typ,
		// An Event's note holds at most 1 kB.
		Note: runoutcome.Truncate(runoutcome.Summary(o.Reason, o.Message), 1024),
	}
	if err := r.Client.Create(ctx, e); err != nil {
		r.eventsRefused = r.refused(ctx, err, "Events")
		if !r.eventsRefused {
			logging.FromContext(ctx).Error(err, "Recording the verdict as an Event failed")
		}
	}
}

// refused reports whether err is the API server refusing the service
// account (no RBAC, or an admission policy), which later writes would meet
// too; it logs that once.
func (r *Recorder) refused(ctx context.Context, err error, what string) bool {
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		return false
	}
	logging.FromContext(ctx).Info("Not allowed to record "+what+"; the verdict is in the log and the termination message only", "reason", err.Error())
	return true
}

// generateName is the prefix of a check's QuantRun: the pod's name, cut so
// that the API server's random suffix fits a name's 63 characters, which
// pod names may exceed.
func generateName(pod string) string {
	const maxPrefix = 63 - 5 - len("-preflight-")
	if len(pod) > maxPrefix {
		pod = pod[:maxPrefix]
	}
	return fmt.Sprintf("%s-preflight-", pod)
}
