// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runpodsim

import (
	"context"
	"fmt"
	"strings"
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kquant/kquant/agent/runmode"
	"github.com/kquant/kquant/agent/runner"
	"github.com/kquant/kquant/agent/simulate"
	kquantscheme "github.com/kquant/kquant/api/scheme"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/internal/logging"
)

// Options configure a Simulator.
type Options struct {
	// Config reaches the API server; every request goes through it.
	Config *rest.Config
	// Spec is each node's GPUs, as the agent pool simulates them.
	Spec simulate.Spec
	// Source is how the simulated kubelet allocated the GPU (DevicePlugin
	// or DRA), recorded by the run in status.allocatedGPU.source.
	Source v1alpha1.AllocationSource
	// Runner executes runs; nil is simulate.Runner (no delay).
	Runner runner.Runner
	// Workers is how many run pods are handled at once.
	Workers int
}

// Simulator binds and executes run pods; Run starts it.
type Simulator struct {
	opts   Options
	client client.Client
	// direct reads and writes past the cache, as a run pod does.
	direct client.Client

	mu sync.Mutex
	// nodes are the simulated nodes, built on a node's first run pod.
	nodes map[string]*simulate.Node
	// exited are the pods whose exit was recorded: the cache may show one
	// Running for a moment after, and a run pod runs once.
	exited map[types.UID]bool
}

// New returns a Simulator.
func New(opts Options) *Simulator {
	if opts.Runner == nil {
		opts.Runner = simulate.Runner{}
	}
	if opts.Workers <= 0 {
		opts.Workers = 64
	}
	if opts.Source == "" {
		opts.Source = v1alpha1.AllocationSourceDevicePlugin
	}
	return &Simulator{opts: opts, nodes: map[string]*simulate.Node{}, exited: map[types.UID]bool{}}
}

// Run watches run pods until ctx ends; ready is called once its cache has
// synced.
func (s *Simulator) Run(ctx context.Context, ready func()) error {
	direct, err := kquantscheme.NewClient(s.opts.Config)
	if err != nil {
		return err
	}
	s.direct = direct
	runPods := labels.SelectorFromSet(labels.Set{runpod.LabelComponent: runpod.ComponentRun})
	mgr, err := ctrl.NewManager(s.opts.Config, ctrl.Options{
		Scheme:                 direct.Scheme(),
		Logger:                 logging.FromContext(ctx),
		Cache:                  cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: runPods}}, DefaultTransform: cache.TransformStripManagedFields()},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating run pod simulator: %w", err)
	}
	s.client = mgr.GetClient()
	err = ctrl.NewControllerManagedBy(mgr).
		Named("kquant-runpod-sim").
		For(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: s.opts.Workers, SkipNameValidation: ptr.To(true)}).
		Complete(s)
	if err != nil {
		return fmt.Errorf("building run pod simulator: %w", err)
	}
	go func() {
		if mgr.GetCache().WaitForCacheSync(ctx) && ready != nil {
			ready()
		}
	}()
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running run pod simulator: %w", err)
	}
	return nil
}

// Reconcile binds an unscheduled run pod, or executes a Running one.
func (s *Simulator) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := s.client.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	switch {
	case pod.DeletionTimestamp != nil:
		return ctrl.Result{}, nil
	case pod.Spec.NodeName == "":
		return ctrl.Result{}, s.bind(ctx, pod)
	case pod.Status.Phase == corev1.PodRunning && !s.hasExited(pod.UID):
		return ctrl.Result{}, s.execute(ctx, pod)
	}
	return ctrl.Result{}, nil
}

// bind makes the scheduler's pods/binding to the node the pod's required
// node affinity names (runpod.Build pins it by metadata.name), after its
// allocation of the pod's ResourceClaims under DRA.
func (s *Simulator) bind(ctx context.Context, pod *corev1.Pod) error {
	node := affinityNode(pod)
	if node == "" {
		return nil
	}
	for _, ref := range pod.Spec.ResourceClaims {
		if ref.ResourceClaimName == nil {
			continue
		}
		if err := s.allocate(ctx, pod, *ref.ResourceClaimName, node); err != nil {
			return err
		}
	}
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := s.direct.SubResource("binding").Create(ctx, pod, b); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("binding pod %s/%s to %s: %w", pod.Namespace, pod.Name, node, err)
	}
	return nil
}

// simulatedDRADriver is the driver the simulated scheduler allocates
// devices of; nothing in kquant reads it.
const simulatedDRADriver = "gpu.nvidia.com"

// allocate writes the scheduler's allocation of a run pod's claim, one
// device of the node's pool, reserved for the pod: one status update, as
// kube-scheduler's binding cycle writes (its finalizer on the claim, and the
// resourceclaim controller's release after the pod, are not simulated: no
// kquant code waits on either).
func (s *Simulator) allocate(ctx context.Context, pod *corev1.Pod, name, node string) error {
	claim := &resourcev1.ResourceClaim{}
	if err := s.direct.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, claim); err != nil {
		return fmt.Errorf("reading claim %s/%s of pod %s: %w", pod.Namespace, name, pod.Name, err)
	}
	if claim.Status.Allocation != nil {
		return nil
	}
	var results []resourcev1.DeviceRequestAllocationResult
	for _, r := range claim.Spec.Devices.Requests {
		results = append(results, resourcev1.DeviceRequestAllocationResult{
			Request: r.Name, Driver: simulatedDRADriver, Pool: node, Device: deviceName(r),
		})
	}
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: results}}
	claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	if err := s.direct.Status().Update(ctx, claim); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("allocating claim %s/%s of pod %s: %w", pod.Namespace, name, pod.Name, err)
	}
	return nil
}

// deviceName names the device of the GPU a request's selector pins
// (runpod.UUIDSelector: `... == "GPU-..."`) as a driver would, its UUID in
// lower case.
func deviceName(r resourcev1.DeviceRequest) string {
	if r.Exactly != nil {
		for _, sel := range r.Exactly.Selectors {
			if sel.CEL == nil {
				continue
			}
			if _, uuid, ok := strings.Cut(sel.CEL.Expression, `== "`); ok {
				return strings.ToLower(strings.TrimSuffix(uuid, `"`))
			}
		}
	}
	return "gpu"
}

// affinityNode is the one node a pod's required node affinity allows by
// metadata.name, or "".
func affinityNode(pod *corev1.Pod) string {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// execute runs the pod's run as its container would, then records the
// container's exit.
func (s *Simulator) execute(ctx context.Context, pod *corev1.Pod) error {
	run, ok := runOf(pod)
	if !ok {
		return nil
	}
	node := s.node(pod.Spec.NodeName)
	out, err := runmode.Execute(ctx, runmode.Options{
		Run:    run,
		Pod:    runmode.Pod{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Node: pod.Spec.NodeName},
		Client: s.direct,
		NVML: func(r *v1alpha1.QuantRun) gonvml.Interface {
			if only, ok := node.Only(r.Spec.GPUUUID); ok {
				return only.Library()
			}
			// No such GPU: the pod sees none, and fails the run as a real
			// one would.
			return simulate.NewNode(pod.Spec.NodeName, nil).Library()
		},
		Source: s.opts.Source,
		Runner: s.opts.Runner,
	})
	// As cmd/agent's run mode: the termination message whether or not the
	// status write landed, exit 0 only for a run that ended here.
	message, exitCode := out.Message, int32(1)
	if out.Phase.IsTerminal() || err == nil {
		message = out.TerminationMessage()
	}
	if err == nil && out.Phase != v1alpha1.RunPhaseFailed {
		exitCode = 0
	}
	if err != nil {
		logging.FromContext(ctx).Info("Run pod failed", "pod", pod.Name, "error", err.Error())
	}
	return s.exit(ctx, pod, exitCode, message)
}

// runOf is the run a run pod executes, from its container's --run
// argument (runpod.Args).
func runOf(pod *corev1.Pod) (types.NamespacedName, bool) {
	for _, c := range pod.Spec.Containers {
		if c.Name != runpod.ContainerName {
			continue
		}
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--run="); ok {
				ns, name, _ := strings.Cut(v, "/")
				return types.NamespacedName{Namespace: ns, Name: name}, name != ""
			}
		}
	}
	return types.NamespacedName{}, false
}

// exit records the container's end in one status patch, as the kubelet
// does when a pod's only container exits with restartPolicy Never.
func (s *Simulator) exit(ctx context.Context, pod *corev1.Pod, exitCode int32, message string) error {
	now := metav1.Now()
	ended := pod.DeepCopy()
	reason := "Completed"
	ended.Status.Phase = corev1.PodSucceeded
	if exitCode != 0 {
		ended.Status.Phase, reason = corev1.PodFailed, "Error"
	}
	for i := range ended.Status.Conditions {
		if c := &ended.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, "PodCompleted", now
		}
	}
	for i := range ended.Status.ContainerStatuses {
		cs := &ended.Status.ContainerStatuses[i]
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.Ready, cs.Started = false, ptr.To(false)
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, Reason: reason, Message: message, StartedAt: started, FinishedAt: now,
		}}
	}
	if err := s.direct.Status().Patch(ctx, ended, client.MergeFrom(pod)); err != nil {
		return fmt.Errorf("recording the exit of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	s.mu.Lock()
	s.exited[pod.UID] = true
	s.mu.Unlock()
	return nil
}

func (s *Simulator) hasExited(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exited[uid]
}

// node is the simulated node name, with the GPUs of Options.Spec: the same
// UUIDs the agent pool publishes for it.
func (s *Simulator) node(name string) *simulate.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[name]
	if n == nil {
		n = simulate.NewNode(name, s.opts.Spec)
		s.nodes[name] = n
	}
	return n
}
