// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package execution_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/execution"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/wait"
)

func TestTimeLeft(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-d)} }
	tests := []struct {
		name        string
		timeout     *int64
		pod         corev1.PodStatus
		wantLeft    time.Duration
		wantLimited bool
	}{
		{name: "not accepted by a kubelet yet: not timed", timeout: ptr.To[int64](60), pod: corev1.PodStatus{Phase: corev1.PodPending}},
		{name: "pulling its image: timed", timeout: ptr.To[int64](60), pod: corev1.PodStatus{Phase: corev1.PodPending, StartTime: ago(20 * time.Second)}, wantLeft: 40 * time.Second, wantLimited: true},
		{name: "running within its limit", timeout: ptr.To[int64](60), pod: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ago(59 * time.Second)}, wantLeft: time.Second, wantLimited: true},
		{name: "running past its limit", timeout: ptr.To[int64](60), pod: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ago(time.Hour)}, wantLeft: -59 * time.Minute, wantLimited: true},
		{name: "exited: not timed", timeout: ptr.To[int64](60), pod: corev1.PodStatus{Phase: corev1.PodFailed, StartTime: ago(time.Hour)}},
		{name: "a run from before time limits: the Standard level's", pod: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ago(time.Minute)}, wantLeft: 29 * time.Minute, wantLimited: true},
		{name: "the largest limit does not overflow", timeout: ptr.To[int64](kquantv1alpha1.MaxDurationSeconds), pod: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ago(0)},
			wantLeft: 366 * 24 * time.Hour, wantLimited: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &kquantv1alpha1.QuantRun{Spec: kquantv1alpha1.QuantRunSpec{Execution: kquantv1alpha1.Execution{RunTimeoutSeconds: tt.timeout}}}
			left, limited := execution.TimeLeft(run, &corev1.Pod{Status: tt.pod}, now)
			if left != tt.wantLeft || limited != tt.wantLimited {
				t.Errorf("timeLeft = %v, %t; want %v, %t", left, limited, tt.wantLeft, tt.wantLimited)
			}
		})
	}
}

// TestRunPastItsTimeLimitFails: a run whose pod has run longer than the
// run's time limit fails with RunTimedOut, with a Warning Event, and its pod
// is deleted, which frees the GPU.
func TestRunPastItsTimeLimitFails(t *testing.T) {
	ns := namespace(t)
	start(t, ns, runpod.AllocationDevicePlugin)
	run := builders.MakeQuantRun("hung-0-0", ns, "job").Bound("gpu-node-1", 0).Obj()
	run.Spec.Execution.RunTimeoutSeconds = ptr.To[int64](1)
	run.Status = kquantv1alpha1.QuantRunStatus{}
	if err := env.Client.Create(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	pod := runPod(t, run)

	// The kubelet accepted the pod an hour ago and it still runs: far past
	// the run's one second, with no clock in the test.
	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: time.Now().Add(-time.Hour)}})
	got := runStatus(t, run, "timed out", func(s *kquantv1alpha1.QuantRunStatus) bool {
		return s.Phase == kquantv1alpha1.RunPhaseFailed && s.Reason == kquantv1alpha1.RunReasonRunTimedOut
	})
	if !strings.Contains(got.Status.Message, "time limit (1s") || got.Status.CompletionTime == nil {
		t.Errorf("timed-out run message %q completionTime %v, want the limit named and a completion time", got.Status.Message, got.Status.CompletionTime)
	}
	wait.For(t, timeout, "the run pod deleted", func() error {
		live := &corev1.Pod{}
		err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), live)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case live.DeletionTimestamp != nil:
			return nil
		}
		return fmt.Errorf("pod %s still there", pod.Name)
	})
	wait.For(t, timeout, "a RunTimedOut event", func() error {
		events := &eventsv1.EventList{}
		if err := env.Client.List(t.Context(), events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == run.Name && e.Reason == kquantv1alpha1.RunReasonRunTimedOut && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
}
