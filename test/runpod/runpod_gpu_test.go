// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package runpod

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
	"github.com/kquant/kquant/test/wait"
)

// agentEnv names the agent binary under test.
const agentEnv = "KQUANT_AGENT_BIN"

// holdEnv makes the test binary a helper holding a CUDA context on device 0
// for that many seconds: the other workload.
const holdEnv = "KQUANT_RUNPOD_HOLD_SECONDS"

var env *testenv.Env

func TestMain(m *testing.M) {
	if s := os.Getenv(holdEnv); s != "" {
		os.Exit(hold(s))
	}
	testenv.RunPackage(m, func(e *testenv.Env) { env = e })
}

func hold(secs string) int {
	d, _ := time.ParseDuration(secs + "s")
	drv, err := cuda.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	dev, err := drv.OpenDevice(0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer dev.Close()
	if err := dev.Do(func(c *cuda.Ctx) error { _, err := c.Alloc(64 << 20); return err }); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("holding")
	time.Sleep(d)
	return 0
}

// gpu0 is GPU 0's UUID, as the run is bound to it.
func gpu0(t *testing.T) string {
	t.Helper()
	lib := gonvml.New()
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		t.Fatalf("NVML: %v", ret)
	}
	defer lib.Shutdown()
	n, _ := lib.DeviceGetCount()
	if n != 1 {
		t.Logf("%d GPUs visible: run mode wants exactly one (set NVIDIA_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES the way a kubelet would)", n)
	}
	d, ret := lib.DeviceGetHandleByIndex(0)
	if ret != gonvml.SUCCESS {
		t.Fatalf("GPU 0: %v", ret)
	}
	uuid, _ := d.GetUUID()
	name, _ := d.GetName()
	t.Logf("GPU 0: %s %s", name, uuid)
	return uuid
}

// newRun creates a run of recipe bound to GPU 0 of node "device"; iterations
// 0 keeps the builder's.
func newRun(t *testing.T, name string, scheme v1alpha1.Scheme, iterations int32, shapes ...v1alpha1.Shape) *v1alpha1.QuantRun {
	t.Helper()
	ns, err := env.CreateNamespace(t.Context(), "runpod")
	if err != nil {
		t.Fatal(err)
	}
	// Recorded as the manager would: agent() runs the pod with this UID.
	run := builders.MakeQuantRun(name, ns, "device").Bound("device", 0).RunPod(name, types.UID("uid-"+ns)).Obj()
	run.Spec.GPUUUID = gpu0(t)
	run.Spec.Recipe.Spec.Scheme = scheme
	if scheme == v1alpha1.SchemeNVFP4BlockScaling {
		run.Spec.Recipe.Spec.Format = v1alpha1.FormatE2M1
	}
	run.Spec.Workload.Shapes = shapes
	run.Spec.Tolerances.RequireBitExact = true
	if iterations > 0 {
		run.Spec.Execution.Iterations = ptr.To(iterations)
	}
	if err := testenv.CreateWithStatus(t.Context(), env.Client, run); err != nil {
		t.Fatal(err)
	}
	return run
}

// agent starts the agent binary in run mode for run, as a run pod would.
func agent(t *testing.T, run *v1alpha1.QuantRun) (*exec.Cmd, *bytes.Buffer, string) {
	t.Helper()
	bin := os.Getenv(agentEnv)
	if bin == "" {
		t.Skipf("$%s names no agent binary", agentEnv)
	}
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := env.Kubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	term := filepath.Join(dir, "termination-log")
	cmd := exec.Command(bin, "run", "--run="+run.Namespace+"/"+run.Name, "--kubeconfig="+kc,
		"--backend=cuda", "--termination-log="+term, "--guard-interval=500ms")
	cmd.Env = append(os.Environ(), "NODE_NAME=device", "POD_NAME="+run.Name, "POD_UID=uid-"+run.Namespace,
		"CUDA_DEVICE_ORDER=PCI_BUS_ID")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &logs, term
}

func get(t *testing.T, run *v1alpha1.QuantRun) *v1alpha1.QuantRun {
	t.Helper()
	got := &v1alpha1.QuantRun{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: run.Namespace, Name: run.Name}, got); err != nil {
		t.Fatal(err)
	}
	return got
}

func report(t *testing.T, run *v1alpha1.QuantRun, logs *bytes.Buffer, term string) {
	t.Helper()
	st, _ := json.MarshalIndent(run.Status, "", "  ")
	msg, _ := os.ReadFile(term)
	t.Logf("status of %s:\n%s\ntermination message: %s\nagent log (tail):\n%s", run.Name, st, msg, tail(logs.String(), 30))
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestRunModeBitExact: one run per scheme family, each in its own agent
// process, Succeeded on the CUDA backend, bit-exact, its GPU recorded.
func TestRunModeBitExact(t *testing.T) {
	shapes := []v1alpha1.Shape{{Rows: 4096, Cols: 4096}, {Rows: 1024, Cols: 8192}}
	for _, scheme := range []v1alpha1.Scheme{v1alpha1.SchemeFloat8CurrentScaling, v1alpha1.SchemeFloat8BlockScaling,
		v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.SchemeNVFP4BlockScaling} {
		t.Run(string(scheme), func(t *testing.T) {
			run := newRun(t, strings.ToLower(string(scheme)), scheme, 0, shapes...)
			cmd, logs, term := agent(t, run)
			err := cmd.Wait()
			got := get(t, run)
			report(t, got, logs, term)
			if code := exitCode(err); code != 0 {
				t.Fatalf("agent exited %d", code)
			}
			r := got.Status.Results
			switch {
			case got.Status.Phase != v1alpha1.RunPhaseSucceeded || r == nil:
				t.Fatalf("phase %s, want Succeeded with results", got.Status.Phase)
			case r.Backend != string(v1alpha1.BackendCUDA):
				t.Errorf("backend %q, want cuda", r.Backend)
			case r.Verdict == v1alpha1.VerdictSkip:
				t.Logf("skipped: %s (the GPU does not support %s)", r.Reason, scheme)
			case r.Accuracy == nil || r.Accuracy.BitExactVsReference == nil || !*r.Accuracy.BitExactVsReference:
				t.Errorf("accuracy %+v: not bit-exact against the reference", r.Accuracy)
			}
			if a := got.Status.AllocatedGPU; a == nil || a.UUID != run.Spec.GPUUUID || a.Index == nil || *a.Index != 0 {
				t.Errorf("allocatedGPU %+v, want GPU 0 %s", a, run.Spec.GPUUUID)
			}
		})
	}
}

// TestRunModeGPUInUse: another process holds the GPU: the run fails with
// GPUInUse before its first kernel and the agent exits non-zero.
func TestRunModeGPUInUse(t *testing.T) {
	helper := exec.Command(os.Args[0])
	helper.Env = append(os.Environ(), holdEnv+"=60")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	if _, err := out.Read(make([]byte, 8)); err != nil {
		t.Fatalf("helper did not take the GPU: %v", err)
	}
	run := newRun(t, "busy", v1alpha1.SchemeFloat8CurrentScaling, 0, v1alpha1.Shape{Rows: 1024, Cols: 1024})
	cmd, logs, term := agent(t, run)
	err = cmd.Wait()
	got := get(t, run)
	report(t, got, logs, term)
	if exitCode(err) == 0 || got.Status.Phase != v1alpha1.RunPhaseFailed || got.Status.Reason != v1alpha1.RunReasonGPUInUse || got.Status.Results != nil {
		t.Errorf("exit %d, status %s/%s: want a non-zero exit and Failed GPUInUse without results", exitCode(err), got.Status.Phase, got.Status.Reason)
	}
	if msg, _ := os.ReadFile(term); !strings.HasPrefix(string(msg), "GPUInUse: ") {
		t.Errorf("termination message %q", msg)
	}
}

// TestRunModeSIGTERM: the pod is deleted while the run executes: the run is
// recorded Failed (RunPodLost), never left Running.
func TestRunModeSIGTERM(t *testing.T) {
	// Long enough to be stopped: a timing loop of 100,000 steps, which
	// checks its context between steps.
	run := newRun(t, "terminated", v1alpha1.SchemeMXFP8BlockScaling, 100000, v1alpha1.Shape{Rows: 8192, Cols: 8192})
	cmd, logs, term := agent(t, run)
	wait.For(t, 2*time.Minute, "run Running", func() error {
		if p := get(t, run).Status.Phase; p != v1alpha1.RunPhaseRunning {
			return fmt.Errorf("phase %q", p)
		}
		return nil
	})
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	got := get(t, run)
	report(t, got, logs, term)
	if exitCode(err) == 0 || got.Status.Phase != v1alpha1.RunPhaseFailed || got.Status.Reason != v1alpha1.RunReasonRunPodLost {
		t.Errorf("exit %d, status %s/%s: want a non-zero exit and Failed RunPodLost", exitCode(err), got.Status.Phase, got.Status.Reason)
	}
}
