// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kquant/kquant/agent/simulate"
)

// DefaultResourceName is the extended resource the plugin advertises by
// default: NVIDIA's, so that run pods request what they would request on a
// real GPU node.
const DefaultResourceName = "nvidia.com/gpu"

// MIGResourcePrefix starts the resources of MIG devices under NVIDIA's mixed
// strategy: nvidia.com/mig-<profile>.
const MIGResourcePrefix = "nvidia.com/mig-"

// DefaultPollInterval is how often Run looks at the device-plugin directory
// (and the unhealthy-GPU file). A kubelet restart is noticed within it.
const DefaultPollInterval = time.Second

// registerTimeout bounds one Register call, so that a kubelet.sock left by a
// dead kubelet cannot hang the watch loop.
const registerTimeout = 10 * time.Second

// maxSocketPath is the longest path a unix socket can have on Linux
// (sun_path is 108 bytes, with the terminating NUL).
const maxSocketPath = 107

// Options configures a Plugin.
type Options struct {
	// NodeName names the simulated node; the GPUs' UUIDs derive from it. It
	// must be the --node-name the node's kquant agent is given.
	NodeName string
	// Spec is the simulated GPUs, as simulate.Parse reads "H100:4".
	Spec simulate.Spec
	// ResourceName is the extended resource advertised (default
	// DefaultResourceName, or MIGResourcePrefix+MIGProfile).
	ResourceName string
	// MIGProfile, when set, makes the plugin advertise the MIG devices of
	// this profile (NVIDIA's mixed strategy) instead of the whole GPUs.
	MIGProfile string
	// DevicePluginDir is the kubelet's device-plugin directory, where
	// kubelet.sock lives and the plugin's socket is made (default
	// v1beta1.DevicePluginPath).
	DevicePluginDir string
	// UnhealthyFile, when set, names a file listing GPUs (indexes or UUIDs,
	// one per line) that the plugin reports Unhealthy. It is read again every
	// PollInterval; a missing file means every GPU is healthy. It lets a
	// test take a GPU away from the kubelet without any API.
	UnhealthyFile string
	// PollInterval is how often the directory and UnhealthyFile are looked
	// at (default DefaultPollInterval).
	PollInterval time.Duration
}

// Plugin advertises a simulated node's GPUs to the kubelet. Run serves and
// keeps it registered; the gRPC methods are safe for concurrent use.
type Plugin struct {
	opts    Options
	socket  string
	devices []Device
	index   map[string]int // UUID to index in devices

	mu        sync.Mutex
	unhealthy map[string]bool
	// changed is closed, and replaced, when a device's health changes: the
	// broadcast that wakes every ListAndWatch stream.
	changed chan struct{}
}

// New checks opts and makes a Plugin; it touches nothing until Run.
func New(opts Options) (*Plugin, error) {
	if opts.NodeName == "" {
		return nil, errors.New("node name is required: the GPUs' UUIDs derive from it")
	}
	if len(opts.Spec) == 0 {
		return nil, errors.New("no GPUs to simulate")
	}
	devices := Devices(opts.NodeName, opts.Spec)
	if opts.MIGProfile != "" {
		devices = MIGDevices(opts.NodeName, opts.Spec)[opts.MIGProfile]
		if len(devices) == 0 {
			return nil, fmt.Errorf("no MIG device of profile %s to simulate", opts.MIGProfile)
		}
		if opts.ResourceName == "" {
			opts.ResourceName = MIGResourcePrefix + opts.MIGProfile
		}
	}
	if opts.ResourceName == "" {
		opts.ResourceName = DefaultResourceName
	}
	if !strings.Contains(opts.ResourceName, "/") {
		return nil, fmt.Errorf("resource name %q: want <domain>/<name>, as the kubelet requires of extended resources", opts.ResourceName)
	}
	if opts.DevicePluginDir == "" {
		opts.DevicePluginDir = v1beta1.DevicePluginPath
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	dir, err := filepath.Abs(opts.DevicePluginDir)
	if err != nil {
		return nil, fmt.Errorf("device-plugin dir %s: %w", opts.DevicePluginDir, err)
	}
	opts.DevicePluginDir = dir
	p := &Plugin{
		opts:      opts,
		socket:    filepath.Join(dir, SocketName(opts.ResourceName)),
		devices:   devices,
		index:     map[string]int{},
		unhealthy: map[string]bool{},
		changed:   make(chan struct{}),
	}
	for i, d := range p.devices {
		p.index[d.UUID] = i
	}
	for _, path := range []string{p.socket, p.kubeletSocket()} {
		if len(path) > maxSocketPath {
			return nil, fmt.Errorf("socket path %s is %d bytes, longer than a unix socket allows (%d)", path, len(path), maxSocketPath)
		}
	}
	return p, nil
}

// SocketName is the file name of the plugin's socket in the device-plugin
// directory, for a resource name: one socket per resource, so that two
// plugins for different resources can share the directory.
func SocketName(resourceName string) string {
	return "kquant-test-" + strings.NewReplacer("/", "-", ".", "-").Replace(resourceName) + ".sock"
}

// ResourceName is the extended resource the plugin advertises.
func (p *Plugin) ResourceName() string { return p.opts.ResourceName }

// Devices lists the advertised GPUs in index order.
func (p *Plugin) Devices() []Device { return append([]Device(nil), p.devices...) }

// Socket is the path of the plugin's socket.
func (p *Plugin) Socket() string { return p.socket }

func (p *Plugin) kubeletSocket() string {
	return filepath.Join(p.opts.DevicePluginDir, filepath.Base(v1beta1.KubeletSocket))
}

// SetUnhealthy reports the GPUs in uuids Unhealthy and every other GPU
// Healthy; open ListAndWatch streams get the new list if anything changed,
// which it returns.
func (p *Plugin) SetUnhealthy(uuids map[string]bool) (bool, error) {
	next := map[string]bool{}
	for u := range uuids {
		if _, ok := p.index[u]; !ok {
			return false, fmt.Errorf("device %s: not one of this node's GPUs", u)
		}
		next[u] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if maps.Equal(next, p.unhealthy) {
		return false, nil
	}
	p.unhealthy = next
	close(p.changed)
	p.changed = make(chan struct{})
	return true, nil
}

// snapshot is the device list as ListAndWatch sends it, and the channel
// that is closed when it next changes.
func (p *Plugin) snapshot() (*v1beta1.ListAndWatchResponse, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	resp := &v1beta1.ListAndWatchResponse{Devices: make([]*v1beta1.Device, 0, len(p.devices))}
	for _, d := range p.devices {
		health := v1beta1.Healthy
		if p.unhealthy[d.UUID] {
			health = v1beta1.Unhealthy
		}
		resp.Devices = append(resp.Devices, &v1beta1.Device{ID: d.UUID, Health: health})
	}
	return resp, p.changed
}

// options are what the plugin tells the kubelet it supports, both in
// Register and in GetDevicePluginOptions.
func (p *Plugin) options() *v1beta1.DevicePluginOptions {
	return &v1beta1.DevicePluginOptions{GetPreferredAllocationAvailable: true}
}

// Run serves the plugin's socket, registers with the kubelet, and keeps
// doing so until ctx is cancelled; then it stops serving and removes the
// socket. When the kubelet restarts it wipes the device-plugin directory and
// makes a new kubelet.sock: Run notices either (within PollInterval), serves
// a fresh socket and registers again. Run returns an error only when it
// cannot serve at all.
func (p *Plugin) Run(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx).WithValues("resource", p.opts.ResourceName, "socket", p.socket)
	var srv *server
	defer func() {
		if srv != nil {
			srv.stop()
		}
		if err := os.Remove(p.socket); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Error(err, "Removing the plugin socket failed")
		}
	}()
	// registeredWith is kubelet.sock as it was when Register succeeded; nil
	// while not registered.
	var registeredWith os.FileInfo
	failures := 0
	healthErr := "" // the last unhealthy-file error, logged once
	tick := time.NewTicker(p.opts.PollInterval)
	defer tick.Stop()
	for {
		if err := p.refreshHealth(log); err == nil {
			healthErr = ""
		} else if err.Error() != healthErr {
			healthErr = err.Error()
			log.Error(err, "Reading the unhealthy-GPU file failed; health unchanged", "file", p.opts.UnhealthyFile)
		}
		if srv != nil && !exists(p.socket) {
			log.Info("Plugin socket removed (kubelet restarted?), serving again")
			srv.stop()
			srv, registeredWith = nil, nil
		}
		if srv == nil {
			var err error
			if srv, err = p.serve(log); err != nil {
				return err
			}
		}
		if registeredWith != nil && !sameFile(registeredWith, p.kubeletSocket()) {
			log.Info("kubelet.sock replaced (kubelet restarted), registering again")
			registeredWith = nil
		}
		if registeredWith == nil {
			fi, err := p.register(ctx)
			switch {
			case err == nil:
				registeredWith, failures = fi, 0
				log.Info("Registered with the kubelet", "node", p.opts.NodeName, "gpus", len(p.devices), "simulate", p.opts.Spec.String())
			case failures == 0:
				failures++
				log.Info("Registering with the kubelet failed, retrying", "err", err.Error())
			default:
				failures++
				log.V(1).Info("Registering with the kubelet failed, retrying", "err", err.Error(), "failures", failures)
			}
		}
		select {
		case <-ctx.Done():
			log.Info("Stopping: removing the plugin socket")
			return nil
		case err := <-srv.done:
			log.Error(err, "gRPC server stopped, serving again")
			srv.stop()
			srv, registeredWith = nil, nil
		case <-tick.C:
		}
	}
}

// refreshHealth applies UnhealthyFile, if there is one. A bad file leaves
// health as it was, so that a mistake cannot flap the devices.
func (p *Plugin) refreshHealth(log logr.Logger) error {
	if p.opts.UnhealthyFile == "" {
		return nil
	}
	data, err := os.ReadFile(p.opts.UnhealthyFile)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", p.opts.UnhealthyFile, err)
	}
	unhealthy, err := ParseDeviceList(data, p.devices)
	if err != nil {
		return err
	}
	changed, err := p.SetUnhealthy(unhealthy)
	if changed {
		log.Info("GPU health changed", "unhealthy", slices.Sorted(maps.Keys(unhealthy)))
	}
	return err
}

// server is one incarnation of the plugin's gRPC server and its socket.
type server struct {
	grpc *grpc.Server
	// done receives what Serve returned, if it stops on its own.
	done chan error
}

func (p *Plugin) serve(log logr.Logger) (*server, error) {
	if err := os.Remove(p.socket); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("removing stale socket %s: %w", p.socket, err)
	}
	lis, err := net.Listen("unix", p.socket)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", p.socket, err)
	}
	s := &server{grpc: grpc.NewServer(), done: make(chan error, 1)}
	v1beta1.RegisterDevicePluginServer(s.grpc, &service{p: p, log: log})
	go func() { s.done <- s.grpc.Serve(lis) }()
	log.V(1).Info("Serving the device-plugin API")
	return s, nil
}

// stop ends the server at once: ListAndWatch streams never end on their
// own, so a graceful stop would wait forever. Closing the listener unlinks
// the socket.
func (s *server) stop() { s.grpc.Stop() }

// register tells the kubelet about the plugin. It returns kubelet.sock as
// it was before the call, so that a replacement made during the call is
// still noticed.
func (p *Plugin) register(ctx context.Context) (os.FileInfo, error) {
	path := p.kubeletSocket()
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("kubelet socket: %w", err)
	}
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", path, err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	_, err = v1beta1.NewRegistrationClient(conn).Register(ctx, &v1beta1.RegisterRequest{
		Version: v1beta1.Version,
		// The kubelet joins Endpoint to its own device-plugin directory.
		Endpoint:     filepath.Base(p.socket),
		ResourceName: p.opts.ResourceName,
		Options:      p.options(),
	})
	if err != nil {
		return nil, fmt.Errorf("registering %s with the kubelet: %w", p.opts.ResourceName, err)
	}
	return fi, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// sameFile reports whether path is still the file old was. A socket made
// again may get the same inode number back, so its modification time (set
// when the socket is bound) must match too.
func sameFile(old os.FileInfo, path string) bool {
	fi, err := os.Stat(path)
	return err == nil && os.SameFile(old, fi) && fi.ModTime().Equal(old.ModTime())
}
