// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package execution

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/runstatus"
	"github.com/kquant/kquant/internal/logging"
)

// timeLeft is how long run's pod may still run before its time limit
// (kquantv1alpha1.RunTimeout of its execution), counted from when the
// node's kubelet accepted the pod: from then on the pod holds its GPU, image
// pull and CUDA initialisation included. ok is false while no limit runs: a
// pod not yet accepted by a kubelet (it waits for a GPU) or one that exited.
func timeLeft(run *kquantv1alpha1.QuantRun, pod *corev1.Pod, now time.Time) (left time.Duration, ok bool) {
	if pod.Status.StartTime == nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0, false
	}
	limit := kquantv1alpha1.RunTimeout(run.Spec.Execution)
	return pod.Status.StartTime.Add(limit).Sub(now), true
}

// timeOut fails run with RunTimedOut and deletes its pod, which frees the
// GPU at once rather than after podExitGrace. The run is failed first: a pod
// deleted before would read as lost (RunPodLost) and be retried as a
// disruption.
func (r *Reconciler) timeOut(ctx context.Context, run *kquantv1alpha1.QuantRun, pod *corev1.Pod) error {
	limit := kquantv1alpha1.RunTimeout(run.Spec.Execution)
	message := fmt.Sprintf("run pod %s ran longer than the run's time limit (%s, spec.execution.runTimeoutSeconds or the level's default); deleted it to free GPU %s",
		pod.Name, limit, run.Spec.GPUUUID)
	now := metav1.NewTime(r.clock.Now())
	if err := runstatus.Apply(ctx, r.client, run.DeepCopy(), runstatus.Change{
		Phase: kquantv1alpha1.RunPhaseFailed, Reason: kquantv1alpha1.RunReasonRunTimedOut, Message: message, CompletionTime: &now,
	}); err != nil {
		return err
	}
	r.recorder.Eventf(run, pod, corev1.EventTypeWarning, kquantv1alpha1.RunReasonRunTimedOut, "FailRun", "%s", message)
	logging.FromContext(ctx).Info("Run timed out", "quantRun", client.ObjectKeyFromObject(run), "limit", limit.String())
	return r.deleteStale(ctx, pod)
}
