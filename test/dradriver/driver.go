// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package dradriver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	drahealth "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"

	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/internal/logging"
)

// ErrBusy is the error of a claim that was allocated a GPU that is prepared
// for another claim.
var ErrBusy = errors.New("GPU already prepared for another claim")

// Options configures a Driver.
type Options struct {
	// NodeName names the simulated node; the GPUs' UUIDs derive from it, and
	// the driver's pool has its name.
	NodeName string
	// Spec is the simulated GPUs, as simulate.Parse reads "H100:4".
	Spec simulate.Spec
	// DriverName defaults to DefaultDriverName.
	DriverName string
	// AttributeDomain defaults to DefaultAttributeDomain.
	AttributeDomain string
	// CDIDir is where the CDI specs go: a directory the container runtime
	// reads (default kubeletplugin.DefaultCDIDir, /var/run/cdi).
	CDIDir string
}

// Driver prepares claims for a simulated node's GPUs. Its methods are safe
// for concurrent use.
type Driver struct {
	drahealth.UnimplementedDRAResourceHealthServer

	opts Options
	gpus map[string]GPU // by device name
	cdi  cdiStore

	mu       sync.Mutex
	prepared map[types.UID][]string // claim to device names
	fatal    func(error)
}

var (
	_ kubeletplugin.DRAPlugin           = (*Driver)(nil)
	_ drahealth.DRAResourceHealthServer = (*Driver)(nil)
)

// New makes a driver and reads back the claims it prepared before a restart.
func New(opts Options) (*Driver, error) {
	opts.DriverName = cmp.Or(opts.DriverName, DefaultDriverName)
	opts.AttributeDomain = cmp.Or(opts.AttributeDomain, DefaultAttributeDomain)
	opts.CDIDir = cmp.Or(opts.CDIDir, kubeletplugin.DefaultCDIDir)
	if opts.NodeName == "" {
		return nil, errors.New("dradriver: the node name is required")
	}
	if len(opts.Spec) == 0 {
		return nil, errors.New("dradriver: no GPUs to publish")
	}
	d := &Driver{opts: opts, gpus: map[string]GPU{}, cdi: newCDIStore(opts.CDIDir, opts.DriverName)}
	for _, g := range GPUs(opts.NodeName, opts.Spec) {
		d.gpus[g.Name] = g
	}
	prepared, err := d.cdi.load()
	if err != nil {
		return nil, fmt.Errorf("dradriver: %w", err)
	}
	d.prepared = prepared
	return d, nil
}

// Resources is what the driver publishes: one pool named after the node,
// with one slice of every GPU.
func (d *Driver) Resources() resourceslice.DriverResources {
	gpus := slices.SortedFunc(maps.Values(d.gpus), func(a, b GPU) int { return a.Index - b.Index })
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		d.opts.NodeName: {Slices: []resourceslice.Slice{{Devices: SliceDevices(gpus, d.opts.AttributeDomain)}}},
	}}
}

// PrepareResourceClaims writes a CDI spec for each claim and returns its CDI
// device IDs. A claim prepared already gets the same answer again.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		res := d.prepare(claim)
		if res.Err != nil {
			logging.FromContext(ctx).Info("Claim not prepared", "claim", claimRef(claim), "reason", res.Err.Error())
		} else {
			logging.FromContext(ctx).Info("Claim prepared", "claim", claimRef(claim), "gpus", d.uuids(d.prepared[claim.UID]))
		}
		out[claim.UID] = res
	}
	return out, nil
}

func claimRef(c *resourceapi.ResourceClaim) string { return c.Namespace + "/" + c.Name }

func (d *Driver) prepare(claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	if claim.Status.Allocation == nil {
		return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s is not allocated", claimRef(claim))}
	}
	var results []resourceapi.DeviceRequestAllocationResult
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == d.opts.DriverName {
			results = append(results, r)
		}
	}
	var names []string
	for _, r := range results {
		if _, ok := d.gpus[r.Device]; !ok || r.Pool != d.opts.NodeName {
			return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s: device %s/%s is not one of this node's GPUs", claimRef(claim), r.Pool, r.Device)}
		}
		if other, busy := d.holder(r.Device); busy && other != claim.UID {
			return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s: %s (%s, claim UID %s): %w", claimRef(claim), r.Device, d.gpus[r.Device].UUID, other, ErrBusy)}
		}
		if !slices.Contains(names, r.Device) {
			names = append(names, r.Device)
		}
	}
	if _, done := d.prepared[claim.UID]; !done {
		if err := d.cdi.write(claim.UID, names, d.uuids(names)); err != nil {
			return kubeletplugin.PrepareResult{Err: err}
		}
		d.prepared[claim.UID] = names
	}
	devices := make([]kubeletplugin.Device, 0, len(results))
	for _, r := range results {
		devices = append(devices, kubeletplugin.Device{
			Requests:     []string{r.Request},
			PoolName:     r.Pool,
			DeviceName:   r.Device,
			CDIDeviceIDs: []string{d.cdi.deviceID(claim.UID, r.Device)},
		})
	}
	return kubeletplugin.PrepareResult{Devices: devices}
}

// holder is the claim a GPU is prepared for.
func (d *Driver) holder(device string) (types.UID, bool) {
	for uid, names := range d.prepared {
		if slices.Contains(names, device) {
			return uid, true
		}
	}
	return "", false
}

func (d *Driver) uuids(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, d.gpus[n].UUID)
	}
	return out
}

// UnprepareResourceClaims removes the claims' CDI specs; a claim that is not
// prepared is no error.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		err := d.cdi.remove(c.UID)
		if err == nil {
			delete(d.prepared, c.UID)
			logging.FromContext(ctx).Info("Claim unprepared", "claim", c.String())
		}
		out[c.UID] = err
	}
	return out, nil
}

// Prepared lists the UUIDs of the GPUs that are prepared for some claim.
func (d *Driver) Prepared() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, names := range d.prepared {
		out = append(out, d.uuids(names)...)
	}
	slices.Sort(out)
	return out
}

// HandleError logs background errors (publishing ResourceSlices); one that
// retrying cannot fix ends Run.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	logging.FromContext(ctx).Error(err, msg)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) {
		d.mu.Lock()
		fatal := d.fatal
		d.mu.Unlock()
		if fatal != nil {
			fatal(err)
		}
	}
}

// Run registers the driver with the kubelet, publishes the node's GPUs and
// serves until ctx ends or a fatal error. opts add to the kubelet plugin
// helper's options (directories, for tests).
func (d *Driver) Run(ctx context.Context, client kubernetes.Interface, opts ...kubeletplugin.Option) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	d.mu.Lock()
	d.fatal = cancel
	d.mu.Unlock()
	helper, err := kubeletplugin.Start(ctx, d, append([]kubeletplugin.Option{
		kubeletplugin.DriverName(d.opts.DriverName),
		kubeletplugin.NodeName(d.opts.NodeName),
		kubeletplugin.KubeClient(client),
	}, opts...)...)
	if err != nil {
		return fmt.Errorf("starting the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	if err := helper.PublishResources(ctx, d.Resources()); err != nil {
		return fmt.Errorf("publishing the ResourceSlice: %w", err)
	}
	<-ctx.Done()
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
