// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/runoutcome"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
	"github.com/kquant/kquant/test/wait"
)

// TestRunMode runs `agent run` as a run pod does, on a simulated GPU and the
// reference backend against a real API server: a run that finishes, and a
// run stopped by SIGTERM, which must end Failed (RunPodLost), never Running.
func TestRunMode(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	env := testenv.ForTest(t)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := env.Kubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	ns, err := env.CreateNamespace(t.Context(), "runmode")
	if err != nil {
		t.Fatal(err)
	}
	const node = "run-node"
	// newRun creates a bound run; a Benchmark runs its iterations even on the
	// reference backend (a Validation there skips timing), which is what
	// keeps a run Running long enough to be signalled.
	newRun := func(name string, mode v1alpha1.JobMode, size int64, iterations int32) *v1alpha1.QuantRun {
		run := builders.MakeQuantRun(name, ns, "job").Bound(node, 0).RunPod(name, "uid-1").Obj()
		run.Spec.GPUUUID = simulate.UUID(node, 0)
		run.Spec.Mode = mode
		run.Spec.Workload.Shapes = []v1alpha1.Shape{{Rows: size, Cols: size}}
		run.Spec.Execution.Iterations, run.Spec.Execution.Warmup = ptr.To(iterations), ptr.To[int32](1)
		run.Spec.Execution.Graphs = v1alpha1.GraphModeEager
		if err := testenv.CreateWithStatus(t.Context(), env.Client, run); err != nil {
			t.Fatal(err)
		}
		return run
	}
	get := func(name string) *v1alpha1.QuantRun {
		run := &v1alpha1.QuantRun{}
		if err := env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, run); err != nil {
			t.Fatal(err)
		}
		return run
	}
	t.Setenv("NODE_NAME", node)
	t.Setenv("POD_UID", "uid-1")
	args := func(name string) []string {
		return []string{"--run=" + ns + "/" + name, "--kubeconfig=" + kc, "--simulate=H100:2", "--backend=reference",
			"--termination-log=" + filepath.Join(dir, name), "--log-format=text"}
	}
	termination := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return string(b)
	}

	t.Run("finished", func(t *testing.T) {
		newRun("finished", v1alpha1.JobModeValidation, 128, 2)
		t.Setenv("POD_NAME", "finished")
		if err := runPod(args("finished")); err != nil {
			t.Fatalf("runPod: %v", err)
		}
		run := get("finished")
		if run.Status.Phase != v1alpha1.RunPhaseSucceeded || run.Status.AllocatedGPU == nil || run.Status.AllocatedGPU.UUID != simulate.UUID(node, 0) {
			t.Errorf("status %+v, want Succeeded on GPU 0", run.Status)
		}
	})

	t.Run("the device plugin gave another GPU", func(t *testing.T) {
		newRun("other-gpu", v1alpha1.JobModeValidation, 128, 2)
		t.Setenv("POD_NAME", "other-gpu")
		t.Setenv(envSimulatedGPUs, simulate.UUID(node, 1))
		if err := executeRun(mustParse(t, args("other-gpu")), logr.Discard()); err != nil {
			t.Fatalf("runPod: %v", err)
		}
		run := get("other-gpu")
		if a := run.Status.AllocatedGPU; run.Status.Phase != v1alpha1.RunPhaseSucceeded || a == nil || a.UUID != simulate.UUID(node, 1) || a.Index != nil {
			t.Errorf("status %+v, want Succeeded on GPU 1, its node index unknown", run.Status)
		}
		if msg := termination("finished"); !strings.HasPrefix(msg, "finished on GPU") {
			t.Errorf("termination message %q", msg)
		}
		if doc, err := runoutcome.Decode(termination("finished")); err != nil || doc.Phase != v1alpha1.RunPhaseSucceeded || doc.Results == nil {
			t.Errorf("termination message's outcome = %+v, %v; want Succeeded with results", doc, err)
		}
	})

	t.Run("SIGTERM", func(t *testing.T) {
		newRun("terminated", v1alpha1.JobModeBenchmark, 2048, 100000)
		t.Setenv("POD_NAME", "terminated")
		done := make(chan error, 1)
		c := mustParse(t, args("terminated"))
		// The process-wide loggers stay as the first run set them: setting
		// them again would race with this test's own client.
		go func() { done <- executeRun(c, logr.Discard()) }()
		wait.For(t, 30*time.Second, "run Running", func() error {
			if p := get("terminated").Status.Phase; p != v1alpha1.RunPhaseRunning {
				return fmt.Errorf("phase %q", p)
			}
			return nil
		})
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), v1alpha1.RunReasonRunPodLost) {
				t.Errorf("runPod = %v, want a RunPodLost failure", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("runPod did not stop on SIGTERM")
		}
		run := get("terminated")
		if run.Status.Phase != v1alpha1.RunPhaseFailed || run.Status.Reason != v1alpha1.RunReasonRunPodLost {
			t.Errorf("status %+v, want Failed RunPodLost", run.Status)
		}
		if msg := termination("terminated"); !strings.HasPrefix(msg, v1alpha1.RunReasonRunPodLost+": ") {
			t.Errorf("termination message %q", msg)
		}
	})
}

func mustParse(t *testing.T, args []string) *runConfig {
	t.Helper()
	c, err := parseRunFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
