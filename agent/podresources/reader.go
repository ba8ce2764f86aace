// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package podresources

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// defaultTimeout bounds each call: the kubelet answers from memory, and a
// hung kubelet must not hang the agent's loop.
const defaultTimeout = 10 * time.Second

// Reader is a read-only client of the kubelet's PodResources API.
type Reader struct {
	conn    *grpc.ClientConn
	client  podresourcesv1.PodResourcesListerClient
	opts    Options
	timeout time.Duration
}

// Dial returns a Reader of the PodResources socket at the absolute path
// (DefaultSocket on a node). gRPC connects lazily, so a missing socket shows up at the first
// read, not here; the caller must Close the Reader.
func Dial(path string, opts Options) (*Reader, error) {
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connecting to kubelet pod resources at %s: %w", path, err)
	}
	return &Reader{conn: conn, client: podresourcesv1.NewPodResourcesListerClient(conn),
		opts: opts, timeout: defaultTimeout}, nil
}

// Close closes the connection.
func (r *Reader) Close() error { return r.conn.Close() }

// List returns which GPU is allocated to which container, resolving device
// IDs with inv.
func (r *Reader) List(ctx context.Context, inv Inventory) (Snapshot, error) {
	resp, err := call(ctx, r, r.client.List, &podresourcesv1.ListPodResourcesRequest{}, "listing pod resources")
	if err != nil {
		return Snapshot{}, err
	}
	return FromList(resp, inv, r.opts), nil
}

// Allocatable returns the GPU devices the node's device plugins can give
// out, resolving device IDs with inv.
func (r *Reader) Allocatable(ctx context.Context, inv Inventory) (Allocatable, error) {
	resp, err := call(ctx, r, r.client.GetAllocatableResources, &podresourcesv1.AllocatableResourcesRequest{}, "getting allocatable resources")
	if err != nil {
		return Allocatable{}, err
	}
	return FromAllocatable(resp, inv, r.opts), nil
}

// call makes one request of the PodResources API under the reader's
// timeout; what says what it was in the error.
func call[Req, Resp any](ctx context.Context, r *Reader, method func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req, what string) (Resp, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	resp, err := method(ctx, req)
	if err != nil {
		return resp, fmt.Errorf("%s: %w", what, err)
	}
	return resp, nil
}

// Pod returns the GPU allocations of one pod: what the agent asks to learn
// which GPU the device plugin gave a run pod. It uses the API's Get, and
// falls back to List where the kubelet does not serve Get (the
// KubeletPodResourcesGet feature gate is off). Device IDs are resolved with
// inv.
func (r *Reader) Pod(ctx context.Context, inv Inventory, namespace, name string) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	resp, err := r.client.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodNamespace: namespace, PodName: name})
	if status.Code(err) == codes.Unimplemented {
		list, err := r.client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
		if err != nil {
			return Snapshot{}, fmt.Errorf("listing pod resources for pod %s/%s: %w", namespace, name, err)
		}
		var mine []*podresourcesv1.PodResources
		for _, p := range list.GetPodResources() {
			if p.GetNamespace() == namespace && p.GetName() == name {
				mine = append(mine, p)
			}
		}
		return FromList(&podresourcesv1.ListPodResourcesResponse{PodResources: mine}, inv, r.opts), nil
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("getting pod resources of pod %s/%s: %w", namespace, name, err)
	}
	return FromList(&podresourcesv1.ListPodResourcesResponse{
		PodResources: []*podresourcesv1.PodResources{resp.GetPodResources()}}, inv, r.opts), nil
}
