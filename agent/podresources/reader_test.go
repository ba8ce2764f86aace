package podresources

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// fakeKubelet serves the real PodResources API with canned answers; it
// exists only in tests.
type fakeKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	list        *podresourcesv1.ListPodResourcesResponse
	allocatable *podresourcesv1.AllocatableResourcesResponse
	// serveGet answers Get from list; false answers Unimplemented, as a
	// kubelet without the KubeletPodResourcesGet feature does.
	serveGet bool
}

func (f *fakeKubelet) Get(ctx context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	if !f.serveGet {
		return f.UnimplementedPodResourcesListerServer.Get(ctx, req)
	}
	for _, p := range f.list.GetPodResources() {
		if p.GetNamespace() == req.GetPodNamespace() && p.GetName() == req.GetPodName() {
			return &podresourcesv1.GetPodResourcesResponse{PodResources: p}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "pod %s/%s not found", req.GetPodNamespace(), req.GetPodName())
}

func (f *fakeKubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return f.list, nil
}

func (f *fakeKubelet) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	return f.allocatable, nil
}

// serve starts f on a unix socket and returns the socket's path. The
// directory is made short on purpose: a unix socket path is limited to 108
// bytes, which t.TempDir's long names can exceed.
func serve(t *testing.T, f *fakeKubelet) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "kubelet.sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return path
}

func TestReaderAgainstFakeKubelet(t *testing.T) {
	f := &fakeKubelet{
		list: &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
			pod("ml", "train", &podresourcesv1.ContainerResources{Name: "main",
				Devices: []*podresourcesv1.ContainerDevices{devices(GPUResourceName, "GPU-zero")}}),
			pod("kquant", "run-a", &podresourcesv1.ContainerResources{Name: "run",
				DynamicResources: []*podresourcesv1.DynamicResource{claim("kquant", "run-a-gpu",
					&podresourcesv1.ClaimResource{DriverName: DefaultDRADriver, PoolName: "node-a", DeviceName: "gpu-1-mig"})}}),
		}},
		allocatable: &podresourcesv1.AllocatableResourcesResponse{Devices: []*podresourcesv1.ContainerDevices{
			devices(GPUResourceName, "0", "1"),
		}},
	}
	r, err := Dial(serve(t, f), node, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })

	snap, err := r.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	wantAlloc := []Allocation{
		{Device: Device{GPUUUID: "GPU-one", MIGDevice: "MIG-slice", Source: SourceDRA, ResourceName: DefaultDRADriver, DeviceID: "node-a/gpu-1-mig"},
			Container: Container{Namespace: "kquant", Pod: "run-a", Container: "run"}, Claim: "kquant/run-a-gpu"},
		{Device: Device{GPUUUID: "GPU-zero", Source: SourceDevicePlugin, ResourceName: GPUResourceName, DeviceID: "GPU-zero"},
			Container: Container{Namespace: "ml", Pod: "train", Container: "main"}},
	}
	if diff := cmp.Diff(wantAlloc, snap.Allocations); diff != "" {
		t.Errorf("List allocations (-want +got):\n%s", diff)
	}

	alloc, err := r.Allocatable(t.Context())
	if err != nil {
		t.Fatalf("Allocatable: %v", err)
	}
	if diff := cmp.Diff([]string{"GPU-one", "GPU-zero"}, alloc.GPUs()); diff != "" {
		t.Errorf("Allocatable GPUs (-want +got):\n%s", diff)
	}
}

func TestReaderWithoutKubelet(t *testing.T) {
	r, err := Dial(filepath.Join(os.TempDir(), "no-such-kubelet.sock"), node, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 2e9)
	defer cancel()
	if _, err := r.List(ctx); err == nil {
		t.Fatal("List without a kubelet succeeded, want an error")
	}
}

func TestReaderPod(t *testing.T) {
	list := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		pod("ml", "train", &podresourcesv1.ContainerResources{Name: "main",
			Devices: []*podresourcesv1.ContainerDevices{devices(GPUResourceName, "GPU-zero")}}),
		pod("kquant", "run-a", &podresourcesv1.ContainerResources{Name: "run",
			Devices: []*podresourcesv1.ContainerDevices{devices(GPUResourceName, "1")}}),
	}}
	want := []Allocation{{
		Device:    Device{GPUUUID: "GPU-one", Source: SourceDevicePlugin, ResourceName: GPUResourceName, DeviceID: "1"},
		Container: Container{Namespace: "kquant", Pod: "run-a", Container: "run"},
	}}
	for _, serveGet := range []bool{true, false} {
		t.Run(fmt.Sprintf("kubelet serves Get: %v", serveGet), func(t *testing.T) {
			r, err := Dial(serve(t, &fakeKubelet{list: list, serveGet: serveGet}), node, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Close() })
			got, err := r.Pod(t.Context(), "kquant", "run-a")
			if err != nil {
				t.Fatalf("Pod: %v", err)
			}
			if diff := cmp.Diff(want, got.Allocations); diff != "" {
				t.Errorf("Pod allocations (-want +got):\n%s", diff)
			}
		})
	}
}
