// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package preflight

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kquant/kquant/agent/nvml"
	"github.com/kquant/kquant/agent/profile"
	"github.com/kquant/kquant/agent/runner"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/logging"
)

// Reasons of a check that produced no verdict of the engine's: the GPU
// could not be checked at all. Each is a Fail: a GPU that cannot run a
// recipe's kernels is no GPU to start a workload on.
const (
	// ReasonNoGPU: NVML inside the container shows no GPU (the pod asked
	// for none, or the kubelet gave it none it can open).
	ReasonNoGPU = "NoGPU"
	// ReasonGPUUnhealthy: NVML reports the GPU unhealthy (an XID).
	ReasonGPUUnhealthy = "GPUUnhealthy"
	// ReasonCheckError: the engine could not run the recipe on the GPU
	// (no backend, a CUDA error, the context ended).
	ReasonCheckError = "CheckError"
)

// Pod is the identity of the pod the preflight runs in, from the downward
// API; Name is empty outside a pod.
type Pod struct {
	Namespace, Name string
	UID             types.UID
	Node            string
}

// Options configure Run.
type Options struct {
	Recipes  []Recipe
	Settings Settings
	// NVML is the library the container sees its GPUs through; Run
	// initialises and shuts it down.
	NVML gonvml.Interface
	// Runner runs one recipe on one GPU: the measurement harness, as in a
	// run pod.
	Runner runner.Runner
	// Open opens a GPU's backend (its CUDA context and kernels) before its
	// first recipe, so that the log times it apart; nil on the reference
	// backend.
	Open runner.Opener
	Pod  Pod
	// Recorder records each check as a QuantRun and the verdict as an
	// Event on the pod; nil records nothing.
	Recorder *Recorder
	Clock    clock.PassiveClock
}

// Check is one recipe on one GPU.
type Check struct {
	Recipe  string           `json:"recipe"`
	GPU     string           `json:"gpu"`
	Verdict v1alpha1.Verdict `json:"verdict"`
	Reason  string           `json:"reason"`
	Message string           `json:"message,omitempty"`
	// Run is the QuantRun that records the check, when one was written.
	Run     string               `json:"run,omitempty"`
	Results *v1alpha1.RunResults `json:"results,omitempty"`
}

// Outcome is the preflight's verdict: the worst of its checks'.
type Outcome struct {
	Verdict v1alpha1.Verdict
	// Reason and Message are the first worst check's.
	Reason, Message string
	// GPUs are the UUIDs of the GPUs (or MIG devices) checked, in NVML's
	// order.
	GPUs   []string
	Checks []Check
	// CompletionTime is when the last check ended.
	CompletionTime metav1.Time
}

// Failed reports whether the workload must not start: a check failed.
func (o Outcome) Failed() bool { return o.Verdict == v1alpha1.VerdictFail }

// Run checks every recipe on every GPU the container sees (the GPUs at
// once, each GPU's recipes in order) and records the checks when a Recorder
// is set (a failure to record is logged, never changes the verdict). Every
// failure is in the Outcome: a container that sees no GPU is a Fail
// (ReasonNoGPU), as is a GPU that cannot run a check.
func Run(ctx context.Context, opts Options) Outcome {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	log := logging.FromContext(ctx)
	start := opts.Clock.Now()
	gpus, err := visibleGPUs(ctx, opts.NVML)
	if err != nil {
		out := failed(opts, ReasonNoGPU, err.Error())
		opts.Recorder.event(ctx, opts.Pod, out)
		return out
	}
	uuids := make([]string, len(gpus))
	for i, g := range gpus {
		uuids[i] = g.UUID
	}
	log.Info("Preflight on the GPUs the kubelet gave this pod", "gpus", uuids, "count", len(gpus),
		"recipes", recipeNames(opts.Recipes), "level", opts.Settings.Level, "node", opts.Pod.Node, "seconds", seconds(opts.Clock.Since(start)))

	out := Outcome{Verdict: v1alpha1.VerdictPass, Reason: v1alpha1.VerdictReasonPass, GPUs: uuids}
	// The GPUs are checked at once, each by its own goroutine (the CUDA
	// runtime gives each device an owner thread of its own): a pod of eight
	// GPUs waits for its slowest GPU, not for the sum of them.
	perGPU := make([][]Check, len(gpus))
	var wg sync.WaitGroup
	for i, g := range gpus {
		wg.Go(func() { perGPU[i] = checkGPU(ctx, opts, g) })
	}
	wg.Wait()
	for _, checks := range perGPU {
		out.Checks = append(out.Checks, checks...)
	}
	for i := range out.Checks {
		c := &out.Checks[i]
		if opts.Recorder != nil {
			c.Run = opts.Recorder.run(ctx, opts, *c)
		}
		if c.Verdict.Severity() > out.Verdict.Severity() {
			out.Verdict, out.Reason, out.Message = c.Verdict, c.Reason, c.Message
		}
	}
	if out.Message == "" {
		out.Message = fmt.Sprintf("%d recipes passed on %d GPUs", len(opts.Recipes), len(gpus))
	}
	out.CompletionTime = metav1.NewTime(opts.Clock.Now())
	log.Info("Preflight done", "verdict", out.Verdict, "reason", out.Reason, "message", out.Message, "seconds", seconds(opts.Clock.Since(start)))
	opts.Recorder.event(ctx, opts.Pod, out)
	return out
}

// failed is the Outcome of a preflight that could not check any GPU.
func failed(opts Options, reason, message string) Outcome {
	return Outcome{Verdict: v1alpha1.VerdictFail, Reason: reason, Message: message, CompletionTime: metav1.NewTime(opts.Clock.Now())}
}

// checkGPU runs every recipe on g: first its backend is opened (timed
// apart, since CUDA's context and the kernels' load dominate a fresh
// process), then each recipe.
func checkGPU(ctx context.Context, opts Options, g v1alpha1.GPU) []Check {
	log := logging.FromContext(ctx).WithValues("gpu", g.UUID)
	checks := make([]Check, 0, len(opts.Recipes))
	each := func(verdict v1alpha1.Verdict, reason, msg string) []Check {
		for _, r := range opts.Recipes {
			checks = append(checks, Check{Recipe: r.Name, GPU: g.UUID, Verdict: verdict, Reason: reason, Message: msg})
		}
		return checks
	}
	if g.Health == v1alpha1.HealthUnhealthy {
		return each(v1alpha1.VerdictFail, ReasonGPUUnhealthy, fmt.Sprintf("GPU %s is unhealthy: %s", g.UUID, g.HealthMessage))
	}
	if opts.Open != nil {
		t := opts.Clock.Now()
		if _, err := opts.Open(ctx, g); err != nil {
			return each(v1alpha1.VerdictFail, ReasonCheckError, fmt.Sprintf("opening GPU %s: %v", g.UUID, err))
		}
		log.Info("GPU opened: context created and kernels loaded", "seconds", seconds(opts.Clock.Since(t)))
	}
	for _, r := range opts.Recipes {
		t := opts.Clock.Now()
		c := checkRecipe(ctx, opts, r, g)
		log.Info("Recipe checked", "recipe", r.Name, "source", r.Source, "verdict", c.Verdict, "reason", c.Reason,
			"message", c.Message, "seconds", seconds(opts.Clock.Since(t)))
		checks = append(checks, c)
	}
	return checks
}

// checkRecipe runs recipe r on g through the runner, as a run pod runs a
// QuantRun, and judges it.
func checkRecipe(ctx context.Context, opts Options, r Recipe, g v1alpha1.GPU) Check {
	c := Check{Recipe: r.Name, GPU: g.UUID}
	res, err := opts.Runner.Run(ctx, opts.run(r, g), g)
	switch {
	case err != nil:
		c.Verdict, c.Reason, c.Message = v1alpha1.VerdictFail, ReasonCheckError, fmt.Sprintf("%s on %s: %v", r.Name, g.UUID, err)
	case res == nil:
		c.Verdict, c.Reason, c.Message = v1alpha1.VerdictFail, ReasonCheckError, fmt.Sprintf("%s on %s: the runner returned no results", r.Name, g.UUID)
	default:
		c.Verdict, c.Reason, c.Results = res.Verdict, res.Reason, res
		c.Message = describe(r.Name, g.UUID, res)
	}
	return c
}

// describe is a check's sentence: the recipe, the GPU, the verdict and the
// figures it rests on.
func describe(recipe, gpu string, res *v1alpha1.RunResults) string {
	s := fmt.Sprintf("%s on %s (%s backend): %s (%s)", recipe, gpu, res.Backend, res.Verdict, res.Reason)
	if c := res.Capability; c != nil && res.Verdict == v1alpha1.VerdictSkip && c.Reason != "" {
		s += ": " + c.Reason
	}
	if a := res.Accuracy; a != nil {
		if a.SNRdB != "" {
			s += ", SNR " + a.SNRdB + " dB"
		}
		if a.BitExactVsReference != nil {
			s += fmt.Sprintf(", bit-exact vs reference %t", *a.BitExactVsReference)
		}
	}
	return s
}

// run is the in-memory QuantRun the runner executes for recipe r on g.
func (opts Options) run(r Recipe, g v1alpha1.GPU) *v1alpha1.QuantRun {
	s := opts.Settings
	return &v1alpha1.QuantRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: opts.Pod.Namespace, Name: opts.Pod.Name},
		Spec: v1alpha1.QuantRunSpec{
			JobRef: v1alpha1.JobReference{Name: opts.Pod.Name},
			Recipe: r.Snapshot(), Mode: s.Mode, Workload: *s.Workload.DeepCopy(),
			Execution: *s.Execution.DeepCopy(), Tolerances: s.Tolerances,
			NodeName: opts.Pod.Node, GPUUUID: g.UUID,
		},
	}
}

// visibleGPUs reads every GPU (or MIG device) the container sees: exactly
// what the kubelet's allocation left visible (the device plugin's or DRA
// driver's NVIDIA_VISIBLE_DEVICES or CDI devices). A MIG-enabled GPU counts
// as the MIG devices visible of it, as in a run pod.
func visibleGPUs(ctx context.Context, lib gonvml.Interface) ([]v1alpha1.GPU, error) {
	n, err := nvml.Open(ctx, lib)
	if err != nil {
		return nil, fmt.Errorf("no GPU visible to the container: %w", err)
	}
	defer func() { _ = n.Close() }()
	node, err := n.Discover(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the container's GPUs: %w", err)
	}
	var out []v1alpha1.GPU
	for _, d := range node.GPUs {
		g := profile.GPU(d, node.CUDADriverVersion)
		if d.MIGMode != v1alpha1.MIGEnabled {
			out = append(out, g)
			continue
		}
		for _, m := range g.MIGDevices {
			slice := *g.DeepCopy()
			slice.UUID, slice.MemoryMiB, slice.MIGDevices = m.UUID, m.MemoryMiB, nil
			out = append(out, slice)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no GPU visible to the container: does it request any (nvidia.com/gpu or a DRA claim)?")
	}
	return out, nil
}

func recipeNames(rs []Recipe) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

// seconds is d for the log: a decimal with milliseconds.
func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
