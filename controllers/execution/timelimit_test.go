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
	"github.com/kquant/kquant/controllers/runpod"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/wait"
)

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
