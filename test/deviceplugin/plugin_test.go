// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kquant/kquant/agent/simulate"
)

// waitLimit is how long a test waits for something the plugin does on its own
// (register, serve again); the plugin polls every testPoll.
const (
	waitLimit = 10 * time.Second
	testPoll  = 20 * time.Millisecond
)

// fakeKubelet is the kubelet's Registration service on kubelet.sock in a
// directory: it records each Register request and, as the kubelet does,
// answers an unsupported version with an error. The real kubelet is the
// cluster test's.
type fakeKubelet struct {
	v1beta1.UnimplementedRegistrationServer
	srv      *grpc.Server
	requests chan *v1beta1.RegisterRequest
}

func startFakeKubelet(t *testing.T, dir string) *fakeKubelet {
	t.Helper()
	lis, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKubelet{srv: grpc.NewServer(), requests: make(chan *v1beta1.RegisterRequest, 10)}
	v1beta1.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(lis) }()
	t.Cleanup(k.srv.Stop)
	return k
}

func (k *fakeKubelet) Register(_ context.Context, req *v1beta1.RegisterRequest) (*v1beta1.Empty, error) {
	if req.Version != v1beta1.Version {
		return nil, status.Errorf(codes.InvalidArgument, "unsupported version %q", req.Version)
	}
	k.requests <- req
	return &v1beta1.Empty{}, nil
}

// next waits for the next Register request.
func (k *fakeKubelet) next(t *testing.T) *v1beta1.RegisterRequest {
	t.Helper()
	select {
	case req := <-k.requests:
		return req
	case <-time.After(waitLimit):
		t.Fatal("the plugin did not register")
		return nil
	}
}

// shortDir is a fresh directory with a path short enough for unix sockets
// (t.TempDir's can exceed the 107 bytes a socket path may have).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "kqdp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// startPlugin runs a plugin for node-a with opts' gaps filled, and stops it
// when the test ends, checking that Run returned nil and removed its socket.
func startPlugin(t *testing.T, opts Options) *Plugin {
	t.Helper()
	if opts.NodeName == "" {
		opts.NodeName = "node-a"
	}
	if opts.Spec == nil {
		opts.Spec = mustSpec(t, "H100:4")
	}
	opts.PollInterval = testPoll
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), testr.New(t)))
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("Run did not return after cancel")
		}
		if _, err := os.Stat(p.Socket()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket %s left behind: %v", p.Socket(), err)
		}
	})
	return p
}

func mustSpec(t *testing.T, s string) simulate.Spec {
	t.Helper()
	spec, err := simulate.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// dialPlugin connects to the endpoint a Register request names, as the
// kubelet does: relative to its device-plugin directory.
func dialPlugin(t *testing.T, dir string, req *v1beta1.RegisterRequest) v1beta1.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, req.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return v1beta1.NewDevicePluginClient(conn)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

func uuidsOf(node string, indexes ...int) []string {
	out := make([]string, 0, len(indexes))
	for _, i := range indexes {
		out = append(out, simulate.UUID(node, i))
	}
	return out
}

// devicesWith is ListAndWatch's answer for node-a's four GPUs, with the
// given ones unhealthy.
func devicesWith(unhealthy ...int) *v1beta1.ListAndWatchResponse {
	resp := &v1beta1.ListAndWatchResponse{}
	for i := range 4 {
		health := v1beta1.Healthy
		for _, u := range unhealthy {
			if u == i {
				health = v1beta1.Unhealthy
			}
		}
		resp.Devices = append(resp.Devices, &v1beta1.Device{ID: simulate.UUID("node-a", i), Health: health})
	}
	return resp
}

func TestRegistersAndServesTheKubelet(t *testing.T) {
	dir := shortDir(t)
	kubelet := startFakeKubelet(t, dir)
	startPlugin(t, Options{DevicePluginDir: dir})

	req := kubelet.next(t)
	wantReq := &v1beta1.RegisterRequest{
		Version:      v1beta1.Version,
		Endpoint:     "kquant-test-nvidia-com-gpu.sock",
		ResourceName: "nvidia.com/gpu",
		Options:      &v1beta1.DevicePluginOptions{GetPreferredAllocationAvailable: true},
	}
	if diff := cmp.Diff(wantReq, req, protocmp.Transform()); diff != "" {
		t.Fatalf("Register request (-want +got):\n%s", diff)
	}

	ctx := testContext(t)
	client := dialPlugin(t, dir, req)
	opts, err := client.GetDevicePluginOptions(ctx, &v1beta1.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantReq.Options, opts, protocmp.Transform()); diff != "" {
		t.Errorf("GetDevicePluginOptions (-want +got):\n%s", diff)
	}

	stream, err := client.ListAndWatch(ctx, &v1beta1.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(devicesWith(), got, protocmp.Transform()); diff != "" {
		t.Errorf("ListAndWatch (-want +got):\n%s", diff)
	}

	alloc, err := client.Allocate(ctx, &v1beta1.AllocateRequest{ContainerRequests: []*v1beta1.ContainerAllocateRequest{
		{DevicesIds: uuidsOf("node-a", 2, 0)},
		{DevicesIds: uuidsOf("node-a", 3)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	env := func(ids []string) map[string]string {
		v := strings.Join(ids, ",")
		return map[string]string{"NVIDIA_VISIBLE_DEVICES": v, "KQUANT_SIMULATED_GPUS": v}
	}
	wantAlloc := &v1beta1.AllocateResponse{ContainerResponses: []*v1beta1.ContainerAllocateResponse{
		{Envs: env(uuidsOf("node-a", 2, 0))},
		{Envs: env(uuidsOf("node-a", 3))},
	}}
	if diff := cmp.Diff(wantAlloc, alloc, protocmp.Transform()); diff != "" {
		t.Errorf("Allocate (-want +got):\n%s", diff)
	}
	_, err = client.Allocate(ctx, &v1beta1.AllocateRequest{ContainerRequests: []*v1beta1.ContainerAllocateRequest{
		{DevicesIds: uuidsOf("node-b", 0)},
	}})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("Allocate of another node's GPU: got %v, want InvalidArgument", err)
	}

	pref, err := client.GetPreferredAllocation(ctx, &v1beta1.PreferredAllocationRequest{ContainerRequests: []*v1beta1.ContainerPreferredAllocationRequest{
		{AvailableDeviceIDs: uuidsOf("node-a", 3, 1, 2), AllocationSize: 2},
		{AvailableDeviceIDs: uuidsOf("node-a", 0, 1, 2, 3), MustIncludeDeviceIDs: uuidsOf("node-a", 3), AllocationSize: 2},
	}})
	if err != nil {
		t.Fatal(err)
	}
	wantPref := &v1beta1.PreferredAllocationResponse{ContainerResponses: []*v1beta1.ContainerPreferredAllocationResponse{
		{DeviceIDs: uuidsOf("node-a", 1, 2)},
		{DeviceIDs: uuidsOf("node-a", 0, 3)},
	}}
	if diff := cmp.Diff(wantPref, pref, protocmp.Transform()); diff != "" {
		t.Errorf("GetPreferredAllocation (-want +got):\n%s", diff)
	}

	if _, err := client.PreStartContainer(ctx, &v1beta1.PreStartContainerRequest{DevicesIds: uuidsOf("node-a", 0)}); err != nil {
		t.Errorf("PreStartContainer: %v", err)
	}
}

func TestPreferredAllocation(t *testing.T) {
	p, err := New(Options{NodeName: "node-a", Spec: mustSpec(t, "H100:8"), DevicePluginDir: "/tmp"})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(i ...int) []string { return uuidsOf("node-a", i...) }
	cases := []struct {
		name        string
		available   []string
		mustInclude []string
		size        int
		want        []string
		wantErr     bool
	}{
		{name: "lowest indexes first", available: ids(7, 5, 1, 4), size: 2, want: ids(1, 4)},
		{name: "all of them", available: ids(2, 0, 1), size: 3, want: ids(0, 1, 2)},
		{name: "fewer available than asked", available: ids(6), size: 2, want: ids(6)},
		{name: "must-include devices first, then the lowest", available: ids(0, 1, 2, 6), mustInclude: ids(6), size: 3, want: ids(0, 1, 6)},
		{name: "must-include devices listed as available too", available: ids(6, 2, 1), mustInclude: ids(6, 2), size: 2, want: ids(2, 6)},
		{name: "unknown device", available: append(ids(0), uuidsOf("node-b", 1)...), size: 1, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.preferred(tc.available, tc.mustInclude, tc.size)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnhealthyFileReachesListAndWatch(t *testing.T) {
	dir := shortDir(t)
	unhealthyFile := filepath.Join(dir, "unhealthy")
	kubelet := startFakeKubelet(t, dir)
	startPlugin(t, Options{DevicePluginDir: dir, UnhealthyFile: unhealthyFile})
	stream, err := dialPlugin(t, dir, kubelet.next(t)).ListAndWatch(testContext(t), &v1beta1.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	recv := func(want *v1beta1.ListAndWatchResponse) {
		t.Helper()
		got, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("ListAndWatch (-want +got):\n%s", diff)
		}
	}
	recv(devicesWith())
	// write replaces the file at once, so the plugin never reads half of it.
	write := func(s string) {
		t.Helper()
		tmp := unhealthyFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, unhealthyFile); err != nil {
			t.Fatal(err)
		}
	}
	write("# by index or UUID\n1\n" + simulate.UUID("node-a", 3) + "\n")
	recv(devicesWith(1, 3))
	write("no-such-gpu\n") // a bad file changes nothing: the next update is the removal's
	time.Sleep(5 * testPoll)
	if err := os.Remove(unhealthyFile); err != nil {
		t.Fatal(err)
	}
	recv(devicesWith())
}

func TestRegistersAgainWhenTheKubeletRestarts(t *testing.T) {
	dir := shortDir(t)
	first := startFakeKubelet(t, dir)
	p := startPlugin(t, Options{DevicePluginDir: dir})
	req := first.next(t)
	ctx := testContext(t)
	stream, err := dialPlugin(t, dir, req).ListAndWatch(ctx, &v1beta1.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}

	// A restarting kubelet stops, wipes its device-plugin directory, and
	// serves a new kubelet.sock.
	first.srv.Stop()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		// The plugin may notice and remove or remake its socket meanwhile.
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	second := startFakeKubelet(t, dir)

	again := second.next(t)
	if again.Endpoint != req.Endpoint || again.ResourceName != req.ResourceName {
		t.Errorf("registered again as %s on %s, want %s on %s", again.ResourceName, again.Endpoint, req.ResourceName, req.Endpoint)
	}
	if _, err := stream.Recv(); err == nil {
		t.Error("the old ListAndWatch stream outlived the socket the kubelet removed")
	}
	stream, err = dialPlugin(t, dir, again).ListAndWatch(ctx, &v1beta1.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := stream.Recv()
	if err != nil {
		t.Fatalf("ListAndWatch on the new socket: %v", err)
	}
	if diff := cmp.Diff(devicesWith(), got, protocmp.Transform()); diff != "" {
		t.Errorf("ListAndWatch (-want +got):\n%s", diff)
	}

	// A kubelet.sock replaced while the plugin's socket stays is a restart
	// too.
	second.srv.Stop()
	if _, err := os.Stat(p.Socket()); err != nil {
		t.Fatalf("plugin socket: %v", err)
	}
	third := startFakeKubelet(t, dir)
	third.next(t)
}

func TestRegistersOnceTheKubeletAppears(t *testing.T) {
	dir := shortDir(t)
	startPlugin(t, Options{DevicePluginDir: dir, ResourceName: "example.com/sim-gpu"})
	time.Sleep(5 * testPoll)
	req := startFakeKubelet(t, dir).next(t)
	if req.ResourceName != "example.com/sim-gpu" || req.Endpoint != "kquant-test-example-com-sim-gpu.sock" {
		t.Errorf("registered %s on %s", req.ResourceName, req.Endpoint)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	long := "/tmp/" + strings.Repeat("d", 100)
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{name: "no node name", opts: Options{Spec: mustSpec(t, "H100:1")}, want: "node name"},
		{name: "no GPUs", opts: Options{NodeName: "n"}, want: "no GPUs"},
		{name: "resource name without a domain", opts: Options{NodeName: "n", Spec: mustSpec(t, "H100:1"), ResourceName: "gpu"}, want: "<domain>/<name>"},
		{name: "socket path too long", opts: Options{NodeName: "n", Spec: mustSpec(t, "H100:1"), DevicePluginDir: long}, want: "longer than a unix socket allows"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
}

func TestParseDeviceList(t *testing.T) {
	devices := Devices("node-a", mustSpec(t, "H100:2,A100:2"))
	cases := []struct {
		name    string
		data    string
		want    map[string]bool
		wantErr bool
	}{
		{name: "empty", data: "", want: map[string]bool{}},
		{name: "indexes, UUIDs, comments and blanks", data: "# gone\n\n 3 \n" + simulate.UUID("node-a", 0) + "\n3\n",
			want: map[string]bool{simulate.UUID("node-a", 0): true, simulate.UUID("node-a", 3): true}},
		{name: "index out of range", data: "4\n", wantErr: true},
		{name: "another node's GPU", data: simulate.UUID("node-b", 0), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDeviceList([]byte(tc.data), devices)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
