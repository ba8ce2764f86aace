// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/executor"
	"github.com/kquant/kquant/api/v1alpha1"
)

// TestFaults runs every fault scenario against one control plane, one after
// the other (each in its own namespace, with its own agents).
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e fault scenarios take minutes; not with -short")
	}
	s := newSuite(t)
	eventually(t, time.Minute, "a manager leader", func() error {
		if s.leader() < 0 {
			return fmt.Errorf("no replica reports leadership")
		}
		return nil
	})
	t.Run("AgentKilledMidRunAndRestarted", s.agentKilledAndRestarted)
	t.Run("LeaderManagerKilled", s.leaderKilled)
	t.Run("APIServerAndEtcdRestarted", s.controlPlaneRestarted)
	t.Run("AgentGoneForGood", s.agentGoneForGood)
	t.Run("JobDeletedMidFlight", s.jobDeleted)
	t.Run("BadInputAtRunTime", s.badInputAtRunTime)
}

// agentKilledAndRestarted: kill -9 the agent while its runs execute; the
// runs stay Running (nobody else may touch them while the node's Lease is
// fresh); the restarted agent re-runs them from the start and they succeed.
func (s *suite) agentKilledAndRestarted(t *testing.T) {
	ns := s.namespace(t, "agent-restart")
	agent := s.startAgent(t, "e2e-restart", "H100:2")
	s.apply(t, ns, slowJob("slow", "EachGPU"))
	running := s.waitRunning(t, ns)
	agent.kill()
	t.Logf("agent killed while run %s was Running", running.Name)
	time.Sleep(2 * time.Second)
	for _, r := range s.runs(t, ns) {
		if isTerminal(r.Status.Phase) && r.Name == running.Name {
			t.Errorf("run %s became %s while its agent was down (Lease still fresh)", r.Name, r.Status.Phase)
		}
	}
	if err := agent.start(); err != nil {
		t.Fatal(err)
	}
	s.waitJob(t, ns, "slow", v1alpha1.JobPhaseSucceeded, 3*time.Minute)
	restarted := 0
	for _, r := range s.runs(t, ns) {
		if c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.RunConditionRestarted); c != nil && c.Status == "True" {
			restarted++
			if c.Reason != executor.ReasonAgentRestarted {
				t.Errorf("run %s: Restarted reason %q", r.Name, c.Reason)
			}
		}
		if r.Spec.Attempt != 0 {
			t.Errorf("run %s: attempt %d; a restarted agent resumes, it does not retry", r.Name, r.Spec.Attempt)
		}
	}
	if restarted == 0 {
		t.Error("no run carries Restarted=True")
	}
	s.checkSettled(t, ns)
}

// leaderKilled: kill -9 the leader replica; the other replica takes over
// once the leader Lease expires (15 s, controller-runtime's default) and the
// job completes.
func (s *suite) leaderKilled(t *testing.T) {
	ns := s.namespace(t, "leader")
	s.startAgent(t, "e2e-leader", "H100:2")
	s.apply(t, ns, slowJob("slow", "EachGPU"))
	s.waitRunning(t, ns)
	old := s.leader()
	if old < 0 {
		t.Fatal("no leader")
	}
	m := s.managers[old]
	m.paused.Store(true)
	m.kill()
	killed := time.Now()
	var took time.Duration
	eventually(t, 45*time.Second, "the other replica to lead", func() error {
		if l := s.leader(); l < 0 || l == old {
			return fmt.Errorf("leader %d", l)
		}
		took = time.Since(killed)
		return nil
	})
	t.Logf("replica %d killed; replica %d leads after %s", old, 1-old, took.Round(100*time.Millisecond))
	// The Lease lasts 15 s from the last renewal and candidates retry every
	// 2 s; the rest is slack for a loaded 2-core CI machine (21 s measured).
	if took > 30*time.Second {
		t.Errorf("takeover took %s, more than the 15 s lease plus the 2 s retry period and slack", took)
	}
	m.paused.Store(false)
	s.waitJob(t, ns, "slow", v1alpha1.JobPhaseSucceeded, 3*time.Minute)
	s.checkSettled(t, ns)
}

// controlPlaneRestarted: stop kube-apiserver and etcd mid-job and start
// them again on the same data; agents and managers reconnect (a manager that
// lost leadership meanwhile exits and is restarted, as by its Deployment)
// and the job completes.
func (s *suite) controlPlaneRestarted(t *testing.T) {
	ns := s.namespace(t, "apiserver")
	agent := s.startAgent(t, "e2e-apiserver", "H100:2")
	s.apply(t, ns, slowJob("slow", "EachGPU"))
	s.waitRunning(t, ns)
	began := time.Now()
	s.cp.restart(t, 3*time.Second)
	t.Logf("API server and etcd back after %s", time.Since(began).Round(100*time.Millisecond))
	s.waitJob(t, ns, "slow", v1alpha1.JobPhaseSucceeded, 4*time.Minute)
	if agent.exited() {
		t.Errorf("the agent exited during the restart:\n%s", agent.tail())
	}
	s.checkSettled(t, ns)
}

// agentGoneForGood: the only node's agent is killed and never comes back;
// once its Lease expires its run fails with NodeLost and is retried on the
// node that is left.
func (s *suite) agentGoneForGood(t *testing.T) {
	ns := s.namespace(t, "node-lost")
	lost := s.startAgent(t, "e2e-lost", "H100:1")
	s.apply(t, ns, slowJob("slow", "AnyGPU"))
	running := s.waitRunning(t, ns)
	if running.Spec.NodeName != "e2e-lost" {
		t.Fatalf("run bound to %s", running.Spec.NodeName)
	}
	// Killed first, the spare started after: a run takes seconds on the
	// reference backend, and one that finished before the kill would leave
	// nothing to lose.
	if err := lost.signal(syscall.SIGKILL, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	s.awaitLeaseExpiryOnCleanup(t, "e2e-lost")
	s.startAgent(t, "e2e-spare", "H100:1")
	job := s.waitJob(t, ns, "slow", v1alpha1.JobPhaseSucceeded, 3*time.Minute)
	var sawLost, sawRetry bool
	for _, r := range s.runs(t, ns) {
		switch {
		case r.Name == running.Name:
			sawLost = r.Status.Phase == v1alpha1.RunPhaseFailed && r.Status.Reason == v1alpha1.ReasonNodeLost
			if !sawLost {
				t.Errorf("run %s on the lost node: %s %q %q", r.Name, r.Status.Phase, r.Status.Reason, r.Status.Message)
			}
		case r.Spec.Attempt > 0 && r.Status.Phase == v1alpha1.RunPhaseSucceeded:
			sawRetry = r.Spec.NodeName == "e2e-spare"
		}
	}
	if !sawLost || !sawRetry {
		t.Errorf("want the run NodeLost on e2e-lost and a retry succeeded on e2e-spare (job %d/%d)", job.Status.Succeeded, job.Status.Total)
	}
	s.checkSettled(t, ns)
}

// jobDeleted: delete a job while its runs execute; its runs go away (the
// manager deletes runs whose job is gone: there is no garbage collector in
// this control plane, so owner references alone would not do it), the agent
// lets go of the GPUs and the next job runs on them.
func (s *suite) jobDeleted(t *testing.T) {
	ns := s.namespace(t, "delete")
	s.startAgent(t, "e2e-delete", "H100:2")
	s.apply(t, ns, slowJob("slow", "EachGPU"))
	s.waitRunning(t, ns)
	if _, err := s.cp.kubectl(t.Context(), nil, "delete", "-n", ns, "quantjob", "slow", "--wait=false"); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "no runs of the deleted job", func() error {
		list := &v1alpha1.QuantRunList{}
		if err := s.c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		if n := len(list.Items); n > 0 {
			return fmt.Errorf("%d runs left, %s is %s", n, list.Items[0].Name, list.Items[0].Status.Phase)
		}
		return nil
	})
	next := slowJob("next", "EachGPU")
	s.apply(t, ns, next)
	s.waitJob(t, ns, "next", v1alpha1.JobPhaseSucceeded, 3*time.Minute)
	s.checkSettled(t, ns)
}
