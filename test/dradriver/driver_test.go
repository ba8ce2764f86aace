// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package dradriver

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	dracel "k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/kquant/kquant/agent/simulate"
)

const testNode = "node-a"

func mustSpec(t *testing.T, s string) simulate.Spec {
	t.Helper()
	spec, err := simulate.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func newDriver(t *testing.T, cdiDir string) *Driver {
	t.Helper()
	d, err := New(Options{NodeName: testNode, Spec: mustSpec(t, "H100:4"), CDIDir: cdiDir})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// allocated is a claim that the scheduler allocated devices of driver to.
func allocated(uid, driver string, devices ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-" + uid, Namespace: "ns", UID: types.UID(uid)}}
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for _, d := range devices {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: driver, Pool: testNode, Device: d})
	}
	return c
}

func TestSliceDevicesCarryTheSimulatedUUIDs(t *testing.T) {
	spec := mustSpec(t, "H100:2,A100:1")
	devices := SliceDevices(GPUs(testNode, spec), "example.com")
	if len(devices) != 3 {
		t.Fatalf("%d devices, want 3", len(devices))
	}
	for i, d := range devices {
		wantName, wantUUID := []string{"gpu-0", "gpu-1", "gpu-2"}[i], simulate.UUID(testNode, i)
		wantProduct := spec.Products()[i]
		if d.Name != wantName {
			t.Errorf("device %d: name %q, want %q", i, d.Name, wantName)
		}
		if got := d.Attributes["example.com/uuid"].StringValue; got == nil || *got != wantUUID {
			t.Errorf("device %d: uuid %v, want %s", i, got, wantUUID)
		}
		if got := d.Attributes["example.com/index"].IntValue; got == nil || *got != int64(i) {
			t.Errorf("device %d: index %v, want %d", i, got, i)
		}
		if got := d.Attributes["example.com/productName"].StringValue; got == nil || *got != wantProduct.Name {
			t.Errorf("device %d: productName %v, want %s", i, got, wantProduct.Name)
		}
		mem := d.Capacity["example.com/memory"].Value
		if mem.Value() != wantProduct.MemoryMiB<<20 {
			t.Errorf("device %d: memory %s, want %d MiB", i, mem.String(), wantProduct.MemoryMiB)
		}
	}
}

func TestPrepareWritesACDISpecWithTheClaimsGPUs(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, dir)
	claim := allocated("uid-1", DefaultDriverName, "gpu-1", "gpu-3")
	// Another driver's device in the same claim is not this driver's business.
	claim.Status.Allocation.Devices.Results = append(claim.Status.Allocation.Devices.Results,
		resourceapi.DeviceRequestAllocationResult{Request: "nic", Driver: "nic.example.com", Pool: testNode, Device: "nic-0"})

	got, err := d.PrepareResourceClaims(t.Context(), []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatal(err)
	}
	want := kubeletplugin.PrepareResult{Devices: []kubeletplugin.Device{
		{Requests: []string{"gpu"}, PoolName: testNode, DeviceName: "gpu-1", CDIDeviceIDs: []string{"k8s.gpu.kquant.dev/gpu=uid-1-gpu-1"}},
		{Requests: []string{"gpu"}, PoolName: testNode, DeviceName: "gpu-3", CDIDeviceIDs: []string{"k8s.gpu.kquant.dev/gpu=uid-1-gpu-3"}},
	}}
	if diff := cmp.Diff(want, got["uid-1"]); diff != "" {
		t.Errorf("prepare result (-want +got):\n%s", diff)
	}

	data, err := os.ReadFile(filepath.Join(dir, "k8s.gpu.kquant.dev-gpu_uid-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	visible := simulate.UUID(testNode, 1) + "," + simulate.UUID(testNode, 3)
	env := []any{"NVIDIA_VISIBLE_DEVICES=" + visible, "KQUANT_SIMULATED_GPUS=" + visible}
	wantSpec := map[string]any{
		"cdiVersion": "0.6.0",
		"kind":       "k8s.gpu.kquant.dev/gpu",
		"devices": []any{
			map[string]any{"name": "uid-1-gpu-1", "containerEdits": map[string]any{"env": env}},
			map[string]any{"name": "uid-1-gpu-3", "containerEdits": map[string]any{"env": env}},
		},
	}
	if diff := cmp.Diff(wantSpec, spec); diff != "" {
		t.Errorf("CDI spec (-want +got):\n%s", diff)
	}

	// The kubelet may ask again (after its restart): the same answer.
	again, err := d.PrepareResourceClaims(t.Context(), []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, again); diff != "" {
		t.Errorf("second prepare differs (-first +second):\n%s", diff)
	}
}

func TestABusyGPUIsRefusedUntilUnprepared(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, dir)
	first, second := allocated("uid-1", DefaultDriverName, "gpu-2"), allocated("uid-2", DefaultDriverName, "gpu-2")
	prepare := func(d *Driver, c *resourceapi.ResourceClaim) error {
		t.Helper()
		res, err := d.PrepareResourceClaims(t.Context(), []*resourceapi.ResourceClaim{c})
		if err != nil {
			t.Fatal(err)
		}
		return res[c.UID].Err
	}
	if err := prepare(d, first); err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if err := prepare(d, second); !errors.Is(err, ErrBusy) {
		t.Fatalf("second claim on the same GPU: %v, want ErrBusy", err)
	}

	// A restarted driver reads what it prepared from the CDI directory.
	restarted := newDriver(t, dir)
	if got, want := restarted.Prepared(), []string{simulate.UUID(testNode, 2)}; !slices.Equal(got, want) {
		t.Errorf("prepared after a restart: %v, want %v", got, want)
	}
	if err := prepare(restarted, second); !errors.Is(err, ErrBusy) {
		t.Fatalf("second claim after a restart: %v, want ErrBusy", err)
	}

	res, err := restarted.UnprepareResourceClaims(t.Context(), []kubeletplugin.NamespacedObject{
		{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "claim-uid-1"}, UID: "uid-1"},
		{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "never-prepared"}, UID: "uid-9"},
	})
	if err != nil || res["uid-1"] != nil || res["uid-9"] != nil {
		t.Fatalf("unprepare: %v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "k8s.gpu.kquant.dev-gpu_uid-1.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CDI spec of the unprepared claim: %v, want gone", err)
	}
	if err := prepare(restarted, second); err != nil {
		t.Fatalf("second claim after the first was unprepared: %v", err)
	}
}

func TestPrepareRefusesWhatIsNotThisNodesGPU(t *testing.T) {
	d := newDriver(t, t.TempDir())
	for name, claim := range map[string]*resourceapi.ResourceClaim{
		"unallocated": {ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u1"}},
		"unknown GPU": allocated("u2", DefaultDriverName, "gpu-7"),
		"another node": func() *resourceapi.ResourceClaim {
			c := allocated("u3", DefaultDriverName, "gpu-0")
			c.Status.Allocation.Devices.Results[0].Pool = "node-b"
			return c
		}(),
	} {
		res, err := d.PrepareResourceClaims(t.Context(), []*resourceapi.ResourceClaim{claim})
		if err != nil {
			t.Fatal(err)
		}
		if res[claim.UID].Err == nil {
			t.Errorf("%s: prepared, want an error", name)
		}
	}
	if got := d.Prepared(); len(got) != 0 {
		t.Errorf("prepared %v after refusals", got)
	}
}

func TestDeviceClassSelectsTheDriver(t *testing.T) {
	c := DeviceClass("gpu.nvidia.com", "gpu.kquant.dev")
	if *c.Name != "gpu.nvidia.com" || len(c.Spec.Selectors) != 1 ||
		*c.Spec.Selectors[0].CEL.Expression != `device.driver == "gpu.kquant.dev"` {
		t.Errorf("DeviceClass = %+v", c)
	}
}

// TestCELSelectorsPinOneGPU evaluates, with the scheduler's own CEL library,
// the selector a run pod's claim carries and the DeviceClass's selector
// against the published devices.
func TestCELSelectorsPinOneGPU(t *testing.T) {
	devices := SliceDevices(GPUs(testNode, mustSpec(t, "H100:4")), DefaultAttributeDomain)
	compiler := dracel.GetCompiler(dracel.Features{})
	matches := func(expr string) []string {
		t.Helper()
		res := compiler.CompileCELExpression(expr, dracel.Options{})
		if res.Error != nil {
			t.Fatalf("compiling %s: %v", expr, res.Error)
		}
		var out []string
		for _, d := range devices {
			ok, _, err := res.DeviceMatches(t.Context(), dracel.Device{Driver: DefaultDriverName, Attributes: d.Attributes, Capacity: d.Capacity})
			if err != nil {
				t.Fatalf("evaluating %s on %s: %v", expr, d.Name, err)
			}
			if ok {
				out = append(out, d.Name)
			}
		}
		return out
	}
	pin := `device.attributes["gpu.nvidia.com"].uuid == "` + simulate.UUID(testNode, 2) + `"`
	if got := matches(pin); !slices.Equal(got, []string{"gpu-2"}) {
		t.Errorf("%s matches %v, want [gpu-2]", pin, got)
	}
	class := *DeviceClass(DefaultDeviceClassName, DefaultDriverName).Spec.Selectors[0].CEL.Expression
	if got := matches(class); len(got) != 4 {
		t.Errorf("the DeviceClass's %s matches %v, want all 4", class, got)
	}
}
