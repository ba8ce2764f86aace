// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runmode_test

import (
	"context"
	"encoding/json"
	"errors"

	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kquant/kquant/agent/runmode"
	"github.com/kquant/kquant/agent/runner"
	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	"github.com/kquant/kquant/internal/bench"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
	"github.com/kquant/kquant/test/wait"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	testenv.RunPackage(m, func(e *testenv.Env) { env = e })
}

// referenceRunner is the measurement harness on the pure-Go reference
// backend: what a run pod without a CUDA driver runs.
func referenceRunner() runner.Runner {
	ref := reference.New()
	return &bench.Runner{BackendFor: func(context.Context, v1alpha1.GPU) (quant.Backend, error) { return ref, nil }}
}

// fixture is one run bound to GPU 0 of a simulated node, and that node.
type fixture struct {
	run  *v1alpha1.QuantRun
	node *simulate.Node
	pod  runmode.Pod
}

// newFixture creates the run as the manager leaves it once it created the
// run pod (status.runPod records the fixture's pod); edits change it before
// it is created.
func newFixture(t *testing.T, gpus string, edits ...func(*v1alpha1.QuantRun)) *fixture {
	t.Helper()
	ctx := t.Context()
	ns, err := env.CreateNamespace(ctx, "runmode")
	if err != nil {
		t.Fatal(err)
	}
	node := "node-" + ns
	pod := runmode.Pod{Namespace: ns, Name: "run-1", UID: types.UID("uid-" + ns), Node: node}
	run := builders.MakeQuantRun("run-1", ns, "job").Bound(node, 0).RunPod(pod.Name, pod.UID).Obj()
	run.Spec.GPUUUID = simulate.UUID(node, 0)
	run.Spec.Workload.Shapes = []v1alpha1.Shape{{Rows: 128, Cols: 256}}
	run.Spec.Execution.Iterations, run.Spec.Execution.Warmup = ptr.To[int32](2), ptr.To[int32](1)
	for _, edit := range edits {
		edit(run)
	}
	recorded := run.Status.DeepCopy()
	if err := env.Client.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	// What the manager writes right after creating the run pod.
	run.Status = *recorded
	if err := env.Client.Status().Update(ctx, run, client.FieldOwner(apply.ManagerController)); err != nil {
		t.Fatal(err)
	}
	spec, err := simulate.Parse(gpus)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{run: run, node: simulate.NewNode(node, spec), pod: pod}
}

// gpuOnly is the NVML a run pod given the run's GPU sees.
func (f *fixture) gpuOnly(t *testing.T) func(*v1alpha1.QuantRun) gonvml.Interface {
	only, ok := f.node.Only(f.run.Spec.GPUUUID)
	if !ok {
		t.Fatal("simulated node lacks the run's GPU")
	}
	return func(*v1alpha1.QuantRun) gonvml.Interface { return only.Library() }
}

func (f *fixture) options(t *testing.T, r runner.Runner) runmode.Options {
	return runmode.Options{
		Run: types.NamespacedName{Namespace: f.run.Namespace, Name: f.run.Name}, Pod: f.pod, Client: env.Client,
		NVML: f.gpuOnly(t), Source: v1alpha1.AllocationSourceDevicePlugin, Runner: r,
		GuardInterval: 20 * time.Millisecond,
	}
}

func (f *fixture) get(t *testing.T) *v1alpha1.QuantRun {
	t.Helper()
	run := &v1alpha1.QuantRun{}
	if err := env.Client.Get(t.Context(), types.NamespacedName{Namespace: f.run.Namespace, Name: f.run.Name}, run); err != nil {
		t.Fatal(err)
	}
	return run
}

// statusManagers are the field managers that own QuantRun status fields.
func statusManagers(run *v1alpha1.QuantRun) []string {
	var out []string
	for _, m := range run.ManagedFields {
		if m.Subresource == "status" {
			out = append(out, m.Manager)
		}
	}
	return out
}

// checkRunPodFields checks the status fields the run pod's field manager
// owns on run, as the API server recorded them: each must be the run pod's
// in apply.QuantRunStatusOwners.
func checkRunPodFields(t *testing.T, run *v1alpha1.QuantRun) {
	t.Helper()
	seen := 0
	for _, m := range run.ManagedFields {
		if m.Manager != apply.ManagerRunPod || m.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status map[string]json.RawMessage `json:"f:status"`
		}
		if err := json.Unmarshal(m.FieldsV1.GetRawBytes(), &fields); err != nil {
			t.Fatal(err)
		}
		for f := range fields.Status {
			seen++
			if name := strings.TrimPrefix(f, "f:"); f != "." && !apply.Owns(apply.ManagerRunPod, name) {
				t.Errorf("the run pod owns status.%s, which apply.QuantRunStatusOwners does not give it", name)
			}
		}
	}
	if seen == 0 {
		t.Error("the API server recorded no status field of the run pod")
	}
}

func TestRunSucceedsAndRecordsItsGPU(t *testing.T) {
	f := newFixture(t, "H100:2")
	out, err := runmode.Execute(t.Context(), f.options(t, referenceRunner()))
	if err != nil {
		t.Fatal(err)
	}
	if !out.Ran() || out.Phase != v1alpha1.RunPhaseSucceeded {
		t.Fatalf("outcome = %+v, want Succeeded", out)
	}
	run := f.get(t)
	want := &v1alpha1.AllocatedGPU{UUID: f.run.Spec.GPUUUID, Index: ptr.To[int32](0), Source: v1alpha1.AllocationSourceDevicePlugin}
	if diff := cmp.Diff(want, run.Status.AllocatedGPU); diff != "" {
		t.Errorf("allocatedGPU (-want +got):\n%s", diff)
	}
	if run.Status.Phase != v1alpha1.RunPhaseSucceeded || run.Status.Results == nil || run.Status.Results.Backend != string(v1alpha1.BackendReference) {
		t.Errorf("status = %+v, want Succeeded with reference results", run.Status)
	}
	if run.Status.AgentID != f.pod.AgentID() || run.Status.StartTime == nil || run.Status.CompletionTime == nil || run.Status.Reason != "" {
		t.Errorf("status = %+v", run.Status)
	}
	// kubectl describe shows the verdict's sentence, as kquantctl prints it.
	if run.Status.Results != nil {
		want := "finished on GPU " + f.run.Spec.GPUUUID + ": " + run.Status.Results.Explain(run.Spec.Tolerances)
		if run.Status.Message != want {
			t.Errorf("status.message = %q, want %q", run.Status.Message, want)
		}
	}
	if diff := cmp.Diff([]string{apply.ManagerController, apply.ManagerRunPod}, statusManagers(run), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("status field managers (-want +got):\n%s", diff)
	}
	checkRunPodFields(t, run)
}

func TestRunFailsWithGPUInUseBeforeItsFirstKernel(t *testing.T) {
	f := newFixture(t, "H100:1")
	f.node.SetProcesses(f.run.Spec.GPUUUID, 4242)
	ran := false
	r := runner.Func(func(context.Context, *v1alpha1.QuantRun, v1alpha1.GPU) (*v1alpha1.RunResults, error) {
		ran = true
		return &v1alpha1.RunResults{}, nil
	})
	out, err := runmode.Execute(t.Context(), f.options(t, r))
	if err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Error("the runner ran beside another process")
	}
	if out.Phase != v1alpha1.RunPhaseFailed || out.Reason != v1alpha1.RunReasonGPUInUse ||
		!strings.HasPrefix(out.TerminationMessage(), "GPUInUse: ") || !strings.Contains(out.Message, "4242") {
		t.Errorf("outcome = %+v, termination message %q", out, out.TerminationMessage())
	}
	run := f.get(t)
	if run.Status.Phase != v1alpha1.RunPhaseFailed || run.Status.Reason != v1alpha1.RunReasonGPUInUse || run.Status.Results != nil {
		t.Errorf("status = %+v, want Failed GPUInUse without results", run.Status)
	}
	checkRunPodFields(t, run)
}

// blockingRunner runs until its context ends, after the test said when the
// run is under way.
func blockingRunner(started chan<- struct{}) runner.Runner {
	return runner.Func(func(ctx context.Context, _ *v1alpha1.QuantRun, _ v1alpha1.GPU) (*v1alpha1.RunResults, error) {
		close(started)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
}

func TestForeignProcessDuringTheRunStopsIt(t *testing.T) {
	f := newFixture(t, "H100:1")
	uuid := f.run.Spec.GPUUUID
	started := make(chan struct{})
	opts := f.options(t, blockingRunner(started))
	// Opening the backend creates this process's context: NVML shows one
	// process, which the guard learns is its own.
	opts.Open = func(context.Context, v1alpha1.GPU) (bool, error) {
		f.node.SetProcesses(uuid, 100)
		return true, nil
	}
	done := make(chan runmode.Outcome, 1)
	go func() {
		out, err := runmode.Execute(t.Context(), opts)
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	<-started
	// Its own process alone for a few checks: the run goes on.
	time.Sleep(100 * time.Millisecond)
	if run := f.get(t); run.Status.Phase != v1alpha1.RunPhaseRunning {
		t.Fatalf("phase = %s while the run executes alone", run.Status.Phase)
	}
	f.node.SetProcesses(uuid, 100, 4242)
	out := <-done
	if out.Reason != v1alpha1.RunReasonGPUInUse || !strings.Contains(out.Message, "4242") || strings.Contains(out.Message, "100 (") {
		t.Errorf("outcome = %+v, want GPUInUse naming 4242 only", out)
	}
	if run := f.get(t); run.Status.Phase != v1alpha1.RunPhaseFailed || run.Status.Reason != v1alpha1.RunReasonGPUInUse {
		t.Errorf("status = %+v", run.Status)
	}
}

func TestSIGTERMFailsTheRunRetryably(t *testing.T) {
	f := newFixture(t, "H100:1")
	started := make(chan struct{})
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan runmode.Outcome, 1)
	go func() {
		out, err := runmode.Execute(ctx, f.options(t, blockingRunner(started)))
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	<-started
	wait.For(t, 10*time.Second, "run Running", func() error {
		if p := f.get(t).Status.Phase; p != v1alpha1.RunPhaseRunning {
			return fmt.Errorf("phase %s", p)
		}
		return nil
	})
	cancel(runmode.ErrTerminated)
	out := <-done
	if out.Phase != v1alpha1.RunPhaseFailed || out.Reason != v1alpha1.RunReasonRunPodLost {
		t.Errorf("outcome = %+v, want Failed RunPodLost", out)
	}
	run := f.get(t)
	if run.Status.Phase != v1alpha1.RunPhaseFailed || run.Status.Reason != v1alpha1.RunReasonRunPodLost || run.Status.CompletionTime == nil {
		t.Errorf("status = %+v, want Failed RunPodLost", run.Status)
	}
}

func TestRunPodThatCannotRun(t *testing.T) {
	tests := []struct {
		name        string
		nvml        func(f *fixture) gonvml.Interface
		node        string
		wantMessage string
	}{
		{name: "every GPU of the node visible", nvml: func(f *fixture) gonvml.Interface { return f.node.Library() },
			wantMessage: "sees 2 GPUs"},
		{name: "no GPU visible", nvml: func(*fixture) gonvml.Interface { return simulate.NewNode("none", nil).Library() },
			wantMessage: "no GPU visible"},
		{name: "another node", node: "elsewhere", wantMessage: "bound to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "H100:2")
			opts := f.options(t, referenceRunner())
			if tt.nvml != nil {
				opts.NVML = func(*v1alpha1.QuantRun) gonvml.Interface { return tt.nvml(f) }
			}
			if tt.node != "" {
				opts.Pod.Node = tt.node
			}
			out, err := runmode.Execute(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if out.Ran() || out.Reason != v1alpha1.RunReasonRunPodFailed || !strings.Contains(out.Message, tt.wantMessage) {
				t.Errorf("outcome = %+v, want RunPodFailed with %q", out, tt.wantMessage)
			}
			if run := f.get(t); run.Status.Phase != v1alpha1.RunPhaseFailed || run.Status.Reason != v1alpha1.RunReasonRunPodFailed {
				t.Errorf("status = %+v", run.Status)
			}
		})
	}
}

func TestFinishedRunIsLeftAlone(t *testing.T) {
	f := newFixture(t, "H100:1")
	run := f.get(t)
	run.Status.Phase, run.Status.Message = v1alpha1.RunPhaseFailed, "NodeLost"
	if err := env.Client.Status().Update(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	out, err := runmode.Execute(t.Context(), f.options(t, referenceRunner()))
	if err != nil {
		t.Fatal(err)
	}
	if out.Phase != "" {
		t.Errorf("outcome = %+v, want nothing done", out)
	}
	if got := f.get(t); got.Status.Phase != v1alpha1.RunPhaseFailed || got.Status.AgentID != "" ||
		!cmp.Equal(got.Status.Message, "NodeLost", cmpopts.EquateEmpty()) {
		t.Errorf("status = %+v, want untouched", got.Status)
	}
}

// TestRunsOnlyAsTheRecordedPod: a pod the run does not record as its run pod
// (another pod's UID, or none within the bound) writes nothing: the run-pod
// admission policy would refuse it, and the recorded pod is the run's.
func TestRunsOnlyAsTheRecordedPod(t *testing.T) {
	for _, tt := range []struct {
		name    string
		record  *v1alpha1.RunPodReference
		wantErr string
	}{
		{"another pod recorded", &v1alpha1.RunPodReference{Name: "run-1", UID: "uid-of-another-pod"}, "records pod run-1 (UID uid-of-another-pod)"},
		{"no pod recorded within the bound", nil, "recorded no pod within"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "H100:1", func(run *v1alpha1.QuantRun) { run.Status.RunPod = tt.record })
			opts := f.options(t, referenceRunner())
			opts.RecordTimeout, opts.RecordPoll = 100*time.Millisecond, 20*time.Millisecond
			out, err := runmode.Execute(t.Context(), opts)
			if !errors.Is(err, runmode.ErrNotRecorded) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Execute = %+v, %v; want ErrNotRecorded saying %q", out, err, tt.wantErr)
			}
			if got := f.get(t); got.Status.AgentID != "" || slices.Contains(statusManagers(got), apply.ManagerRunPod) {
				t.Errorf("status = %+v (managers %v), want untouched by the run pod", got.Status, statusManagers(got))
			}
		})
	}
}
