// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package dradriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drahealth "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/test/testenv"
	"github.com/kquant/kquant/test/wait"
)

// TestKubeletPathAgainstARealAPIServer runs the driver as the kubelet sees
// it: against a real kube-apiserver, it publishes the ResourceSlice and the
// DeviceClass, answers the plugin registry's GetInfo, and prepares and
// unprepares a claim pinned by UUID through the DRA gRPC service.
func TestKubeletPathAgainstARealAPIServer(t *testing.T) {
	env := testenv.ForTest(t)
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ApplyDeviceClass(ctx, cs, DefaultDeviceClassName, DefaultDriverName); err != nil {
		t.Fatal(err)
	}

	// Socket paths must stay short: not under t.TempDir.
	dir, err := os.MkdirTemp("/tmp", "kqdra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	registry, data, cdiDir := filepath.Join(dir, "reg"), filepath.Join(dir, "plugin"), filepath.Join(dir, "cdi")
	for _, d := range []string{registry, data} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	d, err := New(Options{NodeName: testNode, Spec: mustSpec(t, "H100:4"), CDIDir: cdiDir})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(logr.NewContext(context.Background(), testr.New(t)))
	done := make(chan error, 1)
	go func() {
		done <- d.Run(runCtx, cs, kubeletplugin.RegistrarDirectoryPath(registry), kubeletplugin.PluginDataDirectoryPath(data))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	wait.For(t, 30*time.Second, "the ResourceSlice", func() error {
		slices, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + DefaultDriverName})
		if err != nil {
			return err
		}
		if len(slices.Items) != 1 {
			return fmt.Errorf("%d slices", len(slices.Items))
		}
		s := slices.Items[0].Spec
		if s.NodeName == nil || *s.NodeName != testNode || s.Pool.Name != testNode || len(s.Devices) != 4 {
			return fmt.Errorf("slice node %v, pool %s, %d devices", s.NodeName, s.Pool.Name, len(s.Devices))
		}
		return nil
	})

	// The kubelet's plugin watcher asks the registration socket who it is.
	info, err := registerapi.NewRegistrationClient(dial(t, filepath.Join(registry, DefaultDriverName+"-reg.sock"))).
		GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != registerapi.DRAPlugin || info.Name != DefaultDriverName || info.Endpoint != filepath.Join(data, "dra.sock") {
		t.Errorf("GetInfo = %v", info)
	}

	// A claim pinned to gpu-2 by UUID, allocated as the scheduler would.
	uuid := simulate.UUID(testNode, 2)
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: DefaultDeviceClassName, Selectors: []resourceapi.DeviceSelector{{
				CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf(`device.attributes[%q].uuid == %q`, DefaultAttributeDomain, uuid)},
			}}},
		}}}},
	}
	if claim, err = cs.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: DefaultDriverName, Pool: testNode, Device: "gpu-2"},
	}}}
	if claim, err = cs.ResourceV1().ResourceClaims("default").UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	plugin := drapb.NewDRAPluginClient(dial(t, filepath.Join(data, "dra.sock")))
	ref := &drapb.Claim{Namespace: claim.Namespace, Name: claim.Name, Uid: string(claim.UID)}
	prep, err := plugin.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{ref}})
	if err != nil {
		t.Fatal(err)
	}
	got := prep.Claims[string(claim.UID)]
	wantID := fmt.Sprintf("k8s.gpu.kquant.dev/gpu=%s-gpu-2", claim.UID)
	if got == nil || got.Error != "" || len(got.Devices) != 1 || !slices.Equal(got.Devices[0].CdiDeviceIds, []string{wantID}) {
		t.Fatalf("NodePrepareResources = %v, want the CDI device %s", prep, wantID)
	}
	if p := d.Prepared(); !slices.Equal(p, []string{uuid}) {
		t.Errorf("prepared %v, want [%s]", p, uuid)
	}

	// The kubelet's device-health stream: every GPU healthy.
	health, err := drahealth.NewDRAResourceHealthClient(dial(t, filepath.Join(data, "dra.sock"))).
		NodeWatchResources(ctx, &drahealth.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := health.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var healthy []string
	for _, dh := range first.Devices {
		if dh.Health == drahealth.HealthStatus_HEALTHY && dh.Device.PoolName == testNode {
			healthy = append(healthy, dh.Device.DeviceName)
		}
	}
	if want := []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3"}; !slices.Equal(healthy, want) {
		t.Errorf("healthy devices %v, want %v", healthy, want)
	}

	unprep, err := plugin.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{ref}})
	if err != nil || unprep.Claims[string(claim.UID)].GetError() != "" {
		t.Fatalf("NodeUnprepareResources = %v, %v", unprep, err)
	}
	if _, err := os.Stat(filepath.Join(cdiDir, fmt.Sprintf("k8s.gpu.kquant.dev-gpu_%s.json", claim.UID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CDI spec after unprepare: %v, want gone", err)
	}
}

func dial(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
