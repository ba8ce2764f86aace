// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package fakeagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/runstatus"
	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	ac "github.com/kquant/kquant/api/v1alpha1/applyconfiguration/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/test/builders"
)

// FieldManager is the agents' server-side apply field manager.
const FieldManager = apply.ManagerAgent

// Outcome decides how a run ends: its results, or an error to fail it with.
type Outcome func(run *kquantv1alpha1.QuantRun) (*kquantv1alpha1.RunResults, error)

// Agent is a simulated node agent.
type Agent struct {
	client         client.Client
	profile        *kquantv1alpha1.GPUNodeProfile
	leaseNamespace string
	nodeLabels     map[string]string
	createNode     bool
	leaseDuration  time.Duration
	tick           time.Duration
	runFor         time.Duration
	outcome        Outcome

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	started map[string]time.Time
}

// Option configures an Agent.
type Option func(*Agent)

// WithNode also creates the Node object, with labels.
func WithNode(labels map[string]string) Option {
	return func(a *Agent) { a.createNode, a.nodeLabels = true, labels }
}

// WithLeaseDuration sets the Lease's duration (default 3 s); the agent renews
// it every third of that.
func WithLeaseDuration(d time.Duration) Option { return func(a *Agent) { a.leaseDuration = d } }

// WithRunDuration sets how long a run stays Running (default 200 ms).
func WithRunDuration(d time.Duration) Option { return func(a *Agent) { a.runFor = d } }

// WithOutcome sets how runs end (default: Pass with steady numbers).
func WithOutcome(o Outcome) Option { return func(a *Agent) { a.outcome = o } }

// New returns an agent that publishes profile (whose name is the node's) and
// renews its Lease in leaseNamespace.
func New(c client.Client, profile *kquantv1alpha1.GPUNodeProfile, leaseNamespace string, opts ...Option) *Agent {
	a := &Agent{
		client: c, profile: profile.DeepCopy(), leaseNamespace: leaseNamespace,
		leaseDuration: 3 * time.Second, tick: 100 * time.Millisecond, runFor: 200 * time.Millisecond,
		outcome: func(*kquantv1alpha1.QuantRun) (*kquantv1alpha1.RunResults, error) {
			return builders.SyntheticResults("812.5", "12.5", "3.25", "31.5", kquantv1alpha1.VerdictPass), nil
		},
		started: map[string]time.Time{},
	}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Node is the agent's node name.
func (a *Agent) Node() string { return a.profile.Name }

// Start publishes the Node (if asked), the profile and the Lease, then renews
// the Lease and works on runs until Stop or ctx ends.
func (a *Agent) Start(ctx context.Context) error {
	if a.createNode {
		node := builders.MakeNode(a.Node()).Obj()
		node.Labels = a.nodeLabels
		if err := a.client.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", a.Node(), err)
		}
	}
	if err := a.PublishProfile(ctx, a.profile.Status); err != nil {
		return err
	}
	if err := a.renew(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	a.mu.Lock()
	a.cancel, a.done = cancel, make(chan struct{})
	a.mu.Unlock()
	go a.loop(ctx)
	return nil
}

// Stop stops renewing the Lease and working on runs, as a dead agent would.
func (a *Agent) Stop() {
	a.mu.Lock()
	cancel, done := a.cancel, a.done
	a.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Delete stops the agent and deletes its profile, Lease and Node.
func (a *Agent) Delete(ctx context.Context) error {
	a.Stop()
	objs := []client.Object{
		&kquantv1alpha1.GPUNodeProfile{ObjectMeta: metav1.ObjectMeta{Name: a.Node()}},
		builders.MakeLease(kquantv1alpha1.AgentLeaseName(a.Node()), a.leaseNamespace).Obj(),
		builders.MakeNode(a.Node()).Obj(),
	}
	var errs []error
	for _, o := range objs {
		errs = append(errs, client.IgnoreNotFound(a.client.Delete(ctx, o)))
	}
	return errors.Join(errs...)
}

func (a *Agent) loop(ctx context.Context) {
	defer close(a.done)
	renewEvery := a.leaseDuration / 3
	lastRenew := time.Now()
	t := time.NewTicker(a.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(lastRenew) >= renewEvery {
			if err := a.renew(ctx); err == nil {
				lastRenew = time.Now()
			}
		}
		_ = a.workOnRuns(ctx)
	}
}

// PublishProfile applies the profile's metadata, then its status, as the
// agent's publisher does.
func (a *Agent) PublishProfile(ctx context.Context, status kquantv1alpha1.GPUNodeProfileStatus) error {
	if err := a.client.Apply(ctx, ac.GPUNodeProfile(a.Node()), client.FieldOwner(apply.ManagerAgent), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying profile %s: %w", a.Node(), err)
	}
	profile := &kquantv1alpha1.GPUNodeProfile{ObjectMeta: metav1.ObjectMeta{Name: a.Node()}}
	_, err := apply.GPUNodeProfileStatus(ctx, a.client, profile, &status)
	return err
}

func (a *Agent) renew(ctx context.Context) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"holderIdentity":       a.Node() + "-fakeagent",
			"leaseDurationSeconds": int64(a.leaseDuration / time.Second),
			"renewTime":            metav1.NewMicroTime(time.Now()).UTC().Format("2006-01-02T15:04:05.000000Z07:00"),
		},
	}}
	obj.SetAPIVersion("coordination.k8s.io/v1")
	obj.SetKind("Lease")
	obj.SetName(kquantv1alpha1.AgentLeaseName(a.Node()))
	obj.SetNamespace(a.leaseNamespace)
	obj.SetLabels(map[string]string{kquantv1alpha1.LabelNode: a.Node()})
	if err := a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("renewing Lease of %s: %w", a.Node(), err)
	}
	return nil
}

// workOnRuns moves the node's runs along: bound -> Running at once, Running ->
// Succeeded (or Failed) after the run duration.
func (a *Agent) workOnRuns(ctx context.Context) error {
	runs := &kquantv1alpha1.QuantRunList{}
	if err := a.client.List(ctx, runs, client.MatchingLabels{kquantv1alpha1.LabelNode: a.Node()}); err != nil {
		return err
	}
	var errs []error
	for i := range runs.Items {
		run := &runs.Items[i]
		if run.Spec.NodeName != a.Node() {
			continue
		}
		key := client.ObjectKeyFromObject(run).String()
		// A bound run waiting for its agent has stored phase Pending; the
		// controllers' view of it is Bound.
		switch quantrun.Phase(run) {
		case kquantv1alpha1.RunPhaseBound:
			now := metav1.Now()
			errs = append(errs, a.applyRun(ctx, run, runstatus.Status{
				Phase: kquantv1alpha1.RunPhaseRunning, AgentID: a.Node() + "-fakeagent", StartTime: &now,
				BindTime: run.BindTime(), // copied from the annotation, as the agent does
			}))
			a.started[key] = time.Now()
		case kquantv1alpha1.RunPhaseRunning:
			if t, ok := a.started[key]; ok && time.Since(t) < a.runFor {
				continue
			}
			errs = append(errs, a.finishRun(ctx, run))
		}
	}
	return errors.Join(errs...)
}

func (a *Agent) finishRun(ctx context.Context, run *kquantv1alpha1.QuantRun) error {
	results, err := a.outcome(run)
	now := metav1.Now()
	st := runstatus.Status{
		AgentID: a.Node() + "-fakeagent", BindTime: run.Status.BindTime, StartTime: run.Status.StartTime, CompletionTime: &now,
	}
	if err != nil {
		// As the agent: a failure's message, no reason (the agent owns none).
		st.Phase, st.Message = kquantv1alpha1.RunPhaseFailed, err.Error()
		return a.applyRun(ctx, run, st)
	}
	st.Phase, st.Results = kquantv1alpha1.RunPhaseSucceeded, results
	return a.applyRun(ctx, run, st)
}

// applyRun writes st as the agent's status of run, on the version read.
func (a *Agent) applyRun(ctx context.Context, run *kquantv1alpha1.QuantRun, st runstatus.Status) error {
	_, err := runstatus.Apply(ctx, a.client, apply.ManagerAgent, run, st)
	return err
}
