// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nodeagent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/driverupgrade"
	"github.com/kquant/kquant/agent/nodeagent"
	"github.com/kquant/kquant/agent/nvml"
	"github.com/kquant/kquant/agent/profile"
	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
)

// TestAgentStepsAsideForDriverUpgrade drives the GPU Operator's upgrade
// label on a real API server: in each state the profile says the node is
// upgrading and the agent holds no handle to the (simulated) driver while
// its Lease stays fresh; at upgrade-done it reopens the driver and reports
// the new version, which the driver-change trigger re-validates.
func TestAgentStepsAsideForDriverUpgrade(t *testing.T) {
	ctx := context.Background()
	const name = "upgrading-h100"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	sim := simulate.NewNode(name, spec(t, "H100:2"))
	d, err := nvml.Open(ctx, sim.Library())
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	startAgent(t, nodeagent.Options{
		NodeName: name, Namespace: agentNamespace, AgentVersion: "test",
		Execution: nodeagent.ExecutionRunPod, Discoverer: d, Registerer: reg,
	})

	const newDriver = "590.48.01"
	steps := []struct {
		state         string
		setDriver     string
		wantUpgrade   metav1.ConditionStatus // "" when absent
		wantReady     metav1.ConditionStatus
		wantHandles   int
		wantDriver    string
		wantInMessage string
	}{
		{state: "", wantReady: metav1.ConditionTrue, wantHandles: 2, wantDriver: simulate.DriverVersion},
		{state: "upgrade-required", wantUpgrade: metav1.ConditionTrue, wantReady: metav1.ConditionFalse, wantDriver: simulate.DriverVersion,
			wantInMessage: "upgrade-required"},
		{state: "drain-required", wantUpgrade: metav1.ConditionTrue, wantReady: metav1.ConditionFalse, wantDriver: simulate.DriverVersion,
			wantInMessage: "drain-required"},
		{state: "pod-restart-required", setDriver: newDriver, wantUpgrade: metav1.ConditionTrue, wantReady: metav1.ConditionFalse,
			wantDriver: simulate.DriverVersion, wantInMessage: "pod-restart-required"},
		{state: driverupgrade.StateUpgradeDone, wantUpgrade: metav1.ConditionFalse, wantReady: metav1.ConditionTrue, wantHandles: 2,
			wantDriver: newDriver},
		{state: "upgrade-failed", wantUpgrade: metav1.ConditionTrue, wantReady: metav1.ConditionFalse, wantDriver: newDriver,
			wantInMessage: "upgrade-failed"},
		{state: "", wantUpgrade: metav1.ConditionFalse, wantReady: metav1.ConditionTrue, wantHandles: 2, wantDriver: newDriver},
	}
	for _, s := range steps {
		if s.setDriver != "" {
			sim.SetDriverVersion(s.setDriver)
		}
		setUpgradeState(t, name, s.state)
		what := fmt.Sprintf("state %q", s.state)
		eventually(t, 20*time.Second, what, func() error {
			p, err := getProfile(ctx, name)
			if err != nil {
				return err
			}
			st := p.Status
			got := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDriverUpgrade)
			switch {
			case s.wantUpgrade == "" && got != nil:
				return fmt.Errorf("DriverUpgrade condition %+v, want none", got)
			case s.wantUpgrade != "" && (got == nil || got.Status != s.wantUpgrade):
				return fmt.Errorf("DriverUpgrade condition %+v, want %s", got, s.wantUpgrade)
			case s.wantInMessage != "" && !strings.Contains(got.Message, s.wantInMessage):
				return fmt.Errorf("DriverUpgrade message %q, want it to name %s", got.Message, s.wantInMessage)
			}
			if ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); ready == nil || ready.Status != s.wantReady {
				return fmt.Errorf("Ready condition %+v, want %s", ready, s.wantReady)
			}
			if st.DriverVersion != s.wantDriver || st.GPUCount != 2 {
				return fmt.Errorf("driver %q with %d GPUs, want %q with 2", st.DriverVersion, st.GPUCount, s.wantDriver)
			}
			if got := sim.OpenHandles(); got != s.wantHandles {
				return fmt.Errorf("%d open handles to the driver, want %d", got, s.wantHandles)
			}
			wantGauge := 0.0
			if s.wantUpgrade == metav1.ConditionTrue {
				wantGauge = 1
			}
			if got, err := gauge(reg, "kquant_agent_driver_upgrade"); err != nil || got != wantGauge {
				return fmt.Errorf("kquant_agent_driver_upgrade = %v (%v), want %v", got, err, wantGauge)
			}
			return nil
		})
		if s.wantUpgrade == metav1.ConditionTrue {
			leaseRenewed(t, name)
		}
	}
	p, err := getProfile(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionDriverUpgrade); c.Reason != profile.ReasonUpgradeDone {
		t.Errorf("after the upgrade: DriverUpgrade reason %q, want %q", c.Reason, profile.ReasonUpgradeDone)
	}
}

// TestSimulatedAgentExportsItsDriverHandles: a simulated agent, as the
// cluster tests run it, says in its metrics that it holds no handle to its
// simulated driver while the label says an upgrade is on.
func TestSimulatedAgentExportsItsDriverHandles(t *testing.T) {
	ctx := context.Background()
	const name = "upgrading-sim"
	if err := env.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	startAgent(t, nodeagent.Options{
		NodeName: name, Namespace: agentNamespace, AgentVersion: "test",
		Execution: nodeagent.ExecutionRunPod, Simulate: spec(t, "H100:1"), Registerer: reg,
	})
	for _, s := range []struct {
		state string
		want  float64
	}{{"", 2}, {"pod-restart-required", 0}, {driverupgrade.StateUpgradeDone, 2}} {
		setUpgradeState(t, name, s.state)
		eventually(t, 20*time.Second, fmt.Sprintf("handles in state %q", s.state), func() error {
			if got, err := gauge(reg, "kquant_agent_simulated_driver_handles"); err != nil || got != s.want {
				return fmt.Errorf("kquant_agent_simulated_driver_handles = %v (%v), want %v", got, err, s.want)
			}
			return nil
		})
	}
}

// gauge reads one unlabelled gauge of reg.
func gauge(reg *prometheus.Registry, name string) (float64, error) {
	families, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue(), nil
		}
	}
	return 0, fmt.Errorf("no gauge %s", name)
}

// setUpgradeState sets the GPU Operator's upgrade label, or removes it
// when state is empty.
func setUpgradeState(t *testing.T, name, state string) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	if state == "" {
		delete(node.Labels, driverupgrade.LabelUpgradeState)
	} else {
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[driverupgrade.LabelUpgradeState] = state
	}
	if err := env.Client.Patch(ctx, node, patch); err != nil {
		t.Fatal(err)
	}
}

// leaseRenewed waits for one renewal of the agent's Lease: stepping aside
// is not going away.
func leaseRenewed(t *testing.T, node string) {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: agentNamespace, Name: v1alpha1.AgentLeaseName(node)}
	first := &coordinationv1.Lease{}
	eventually(t, 10*time.Second, "lease", func() error { return env.Client.Get(ctx, key, first) })
	eventually(t, 10*time.Second, "lease renewal while stepping aside", func() error {
		now := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, key, now); err != nil {
			return err
		}
		if !now.Spec.RenewTime.After(first.Spec.RenewTime.Time) {
			return fmt.Errorf("renewTime still %s", now.Spec.RenewTime)
		}
		return nil
	})
}
