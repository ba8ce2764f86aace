// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package gpuguard

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kquant/kquant/agent/gpuguard"
	"github.com/kquant/kquant/internal/cuda"
)

// holdEnv makes the test binary a helper that holds a CUDA context on
// device 0 for the given number of seconds: the "other workload".
const holdEnv = "KQUANT_GPUGUARD_HOLD_SECONDS"

func TestMain(m *testing.M) {
	if s := os.Getenv(holdEnv); s != "" {
		secs, _ := strconv.Atoi(s)
		os.Exit(holdContext(time.Duration(secs) * time.Second))
	}
	os.Exit(m.Run())
}

func holdContext(d time.Duration) int {
	dev, err := openDevice0()
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 2
	}
	defer dev.Close()
	os.Stdout.WriteString("holding\n")
	time.Sleep(d)
	return 0
}

// openDevice0 opens CUDA device 0 and allocates on it, so that the driver
// lists this process as a compute process.
func openDevice0() (*cuda.Device, error) {
	drv, err := cuda.Open()
	if err != nil {
		return nil, err
	}
	dev, err := drv.OpenDevice(0)
	if err != nil {
		return nil, err
	}
	err = dev.Do(func(c *cuda.Ctx) error {
		_, err := c.Alloc(64 << 20)
		return err
	})
	if err != nil {
		dev.Close()
		return nil, err
	}
	return dev, nil
}

func TestGuardOnRealGPU(t *testing.T) {
	// CUDA's device 0 is NVML's index 0 only in PCI order.
	t.Setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
	lib := gonvml.New()
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		t.Fatalf("NVML init: %v", ret)
	}
	t.Cleanup(func() { _ = lib.Shutdown() })
	d, ret := lib.DeviceGetHandleByIndex(0)
	if ret != gonvml.SUCCESS {
		t.Fatalf("GPU 0: %v", ret)
	}
	uuid, _ := d.GetUUID()
	name, _ := d.GetName()
	t.Logf("GPU 0: %s %s, pid %d", name, uuid, os.Getpid())
	guard := gpuguard.New(lib)

	procs, err := guard.Processes(uuid)
	if err != nil {
		t.Fatalf("Processes: %v", err)
	}
	t.Logf("before: %+v", procs)
	if err := guard.Check(uuid, gpuguard.NoProcessAllowed); err != nil {
		t.Fatalf("idle GPU: %v", err)
	}

	// This process takes the GPU: the run's own context.
	dev, err := openDevice0()
	if err != nil {
		t.Fatalf("opening CUDA device 0: %v", err)
	}
	own, err := guard.Processes(uuid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("with our own context: %+v", own)
	if len(own) == 0 {
		t.Fatal("NVML does not list this process's context")
	}
	if err := guard.Check(uuid, gpuguard.NoProcessAllowed); !errors.Is(err, gpuguard.ErrGPUInUse) {
		t.Errorf("Check(NoProcessAllowed) with a context = %v, want GPUInUse", err)
	}
	self := uint32(os.Getpid())
	sameNamespace := own[0].PID == self
	t.Logf("NVML's PID for this process: %d, ours: %d (same PID namespace as the driver: %v)", own[0].PID, self, sameNamespace)
	if sameNamespace {
		if err := guard.Check(uuid, gpuguard.PIDs(self)); err != nil {
			t.Errorf("Check(own PID) = %v, want nil", err)
		}
	}

	// Another process takes the GPU beside us: foreign.
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holdEnv+"=20")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 8)
	if _, err := out.Read(buf); err != nil {
		t.Fatalf("helper did not take the GPU: %v", err)
	}
	err = guard.Check(uuid, gpuguard.PIDs(own[0].PID))
	var inUse *gpuguard.InUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("Check with a second process = %v, want GPUInUse", err)
	}
	t.Logf("foreign: %s", gpuguard.TerminationMessage(err))
	if sameNamespace && (len(inUse.Processes) != 1 || inUse.Processes[0].PID != uint32(cmd.Process.Pid)) {
		t.Errorf("foreign processes %+v, want exactly the helper %d", inUse.Processes, cmd.Process.Pid)
	}

	// Both leave: the GPU is free again.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	dev.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := guard.Check(uuid, gpuguard.NoProcessAllowed)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GPU not free 10s after both processes left: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
