// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package fakekubelet

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Kubelet answers List, GetAllocatableResources and (with ServeGet) Get from
// what the test set; safe for concurrent use.
type Kubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer

	mu          sync.Mutex
	list        *podresourcesv1.ListPodResourcesResponse
	allocatable *podresourcesv1.AllocatableResourcesResponse
	serveGet    bool
}

// New returns a kubelet that answers List with list and
// GetAllocatableResources with allocatable. serveGet false answers Get with
// Unimplemented, as a kubelet without the KubeletPodResourcesGet feature.
func New(list *podresourcesv1.ListPodResourcesResponse, allocatable *podresourcesv1.AllocatableResourcesResponse, serveGet bool) *Kubelet {
	return &Kubelet{list: list, allocatable: allocatable, serveGet: serveGet}
}

// SetList changes List's answer, as pods come and go.
func (k *Kubelet) SetList(list *podresourcesv1.ListPodResourcesResponse) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.list = list
}

// Get answers from the List answer.
func (k *Kubelet) Get(ctx context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.serveGet {
		return k.UnimplementedPodResourcesListerServer.Get(ctx, req)
	}
	for _, p := range k.list.GetPodResources() {
		if p.GetNamespace() == req.GetPodNamespace() && p.GetName() == req.GetPodName() {
			return &podresourcesv1.GetPodResourcesResponse{PodResources: p}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "pod %s/%s not found", req.GetPodNamespace(), req.GetPodName())
}

// List answers with the list set.
func (k *Kubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.list, nil
}

// GetAllocatableResources answers with the allocatable devices set.
func (k *Kubelet) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.allocatable, nil
}

// Serve starts k on a unix socket until the test ends and returns the
// socket's path. The directory is short on purpose: a unix socket path is
// limited to 108 bytes, which t.TempDir's long names can exceed.
func Serve(t testing.TB, k *Kubelet) string {
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
	podresourcesv1.RegisterPodResourcesListerServer(srv, k)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return path
}
