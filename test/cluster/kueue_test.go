// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/test/testenv"
)

// Kueue's names for plain pods (its pod integration).
const (
	kueueQueueLabel = "kueue.x-k8s.io/queue-name"
	kueueGate       = "kueue.x-k8s.io/admission"
	// kueueQueue is the LocalQueue and ClusterQueue of config/samples/kueue,
	// which hack/cluster.sh applies; its quota is kueueGPUQuota GPUs.
	kueueQueue    = "kquant"
	kueueGPUQuota = 2
)

// kueueGatesPods: plain pods labelled with a LocalQueue are gated by Kueue's
// webhook until Kueue admits them; the ClusterQueue's nvidia.com/gpu quota
// admits two one-GPU pods and holds the third back, gated, until one of the
// two ends. The ClusterQueue never preempts.
func kueueGatesPods(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "e2e-kueue")
	defer cl.deleteNamespace(t, ns)
	cl.apply(t, ns, nil, filepath.Join(testenv.RepoRoot(), "config", "samples", "kueue", "localqueue.yaml"))

	var preemption struct {
		WithinClusterQueue  string `json:"withinClusterQueue"`
		ReclaimWithinCohort string `json:"reclaimWithinCohort"`
	}
	decode(t, cl.kubectl(t, "get", "clusterqueue", kueueQueue, "-o", "jsonpath={.spec.preemption}"), &preemption)
	if preemption.WithinClusterQueue != "Never" || preemption.ReclaimWithinCohort != "Never" {
		t.Errorf("ClusterQueue %s preemption %+v, want Never and Never", kueueQueue, preemption)
	}

	labels := map[string]string{kueueQueueLabel: kueueQueue}
	oneGPU := "{limits: {nvidia.com/gpu: 1}}"
	admitted := []string{"first", "second"}
	for _, name := range admitted {
		cl.apply(t, ns, []byte(envPod(name, "", labels, oneGPU)), "-")
	}
	for _, name := range admitted {
		cl.waitPodPhase(t, ns, name, corev1.PodRunning, 2*time.Minute)
	}
	cl.apply(t, ns, []byte(envPod("third", "", labels, oneGPU)), "-")
	msg := cl.waitWorkloadPending(t, ns, "third", time.Minute)
	third := cl.pod(t, ns, "third")
	if !gated(third) || third.Status.Phase != corev1.PodPending {
		t.Fatalf("third pod: phase %s, scheduling gates %v; want Pending behind %s", third.Status.Phase, third.Spec.SchedulingGates, kueueGate)
	}
	t.Logf("third pod gated, its workload pending: %s", msg)
	for _, name := range admitted {
		if p := cl.pod(t, ns, name); gated(p) {
			t.Errorf("pod %s runs but is still gated", name)
		}
	}

	// The first pod ends: its quota comes back and the third is admitted.
	cl.kubectl(t, "delete", "pod", "-n", ns, "first", "--wait=true", "--timeout=2m")
	cl.waitPodPhase(t, ns, "third", corev1.PodRunning, 2*time.Minute)
	if p := cl.pod(t, ns, "third"); gated(p) {
		t.Errorf("third pod runs but is still gated")
	}
	logs := cl.kubectl(t, "logs", "-n", ns, "third")
	if !strings.HasPrefix(logs, "NVIDIA_VISIBLE_DEVICES=GPU-") {
		t.Errorf("third pod's log %q: no GPU from the device plugin", logs)
	}
}

func (cl *cluster) pod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func gated(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == kueueGate })
}

// ownerRef is the part of an owner reference that names the owner.
type ownerRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// waitWorkloadPending waits until Kueue has tried the pod's Workload and left
// it without quota, and returns the reason Kueue gives.
func (cl *cluster) waitWorkloadPending(t *testing.T, ns, pod string, timeout time.Duration) string {
	t.Helper()
	var msg string
	eventually(t, timeout, fmt.Sprintf("pod %s's Workload pending for quota", pod), func() error {
		var list struct {
			Items []struct {
				Metadata struct {
					OwnerReferences []ownerRef `json:"ownerReferences"`
				} `json:"metadata"`
				Status struct {
					Conditions []struct {
						Type    string `json:"type"`
						Status  string `json:"status"`
						Reason  string `json:"reason"`
						Message string `json:"message"`
					} `json:"conditions"`
				} `json:"status"`
			} `json:"items"`
		}
		decode(t, cl.kubectl(t, "get", "workloads.kueue.x-k8s.io", "-n", ns, "-o", "json"), &list)
		for _, w := range list.Items {
			if !slices.Contains(w.Metadata.OwnerReferences, ownerRef{Kind: "Pod", Name: pod}) {
				continue
			}
			for _, c := range w.Status.Conditions {
				if c.Type == "QuotaReserved" && c.Status == "False" && c.Reason == "Pending" {
					msg = c.Message
					return nil
				}
			}
			return fmt.Errorf("workload conditions %+v", w.Status.Conditions)
		}
		return fmt.Errorf("no Workload owned by pod %s yet", pod)
	})
	return msg
}
