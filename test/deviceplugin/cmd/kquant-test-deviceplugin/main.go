// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"flag"
	"maps"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kquant/kquant/test/deviceplugin"
	"github.com/kquant/kquant/test/simnode"
)

// labelRetryInterval is how often the Node is tried while the kubelet has
// not registered it yet.
const labelRetryInterval = 2 * time.Second

// config is the command line.
type config struct {
	simnode.Flags
	resourceName, dir, unhealthyFile string
	pollInterval                     time.Duration
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("kquant-test-deviceplugin", flag.ContinueOnError)
	c.AddFlags(fs, "kubeconfig for labelling the Node as GPU feature discovery would; none: no labels")
	fs.StringVar(&c.resourceName, "resource-name", deviceplugin.DefaultResourceName, "extended resource to advertise")
	fs.StringVar(&c.dir, "device-plugin-dir", "/var/lib/kubelet/device-plugins/", "the kubelet's device-plugin directory (where kubelet.sock is)")
	fs.StringVar(&c.unhealthyFile, "unhealthy-file", "", "file listing GPUs (indexes or UUIDs, one per line) to report Unhealthy; re-read every --poll-interval")
	fs.DurationVar(&c.pollInterval, "poll-interval", deviceplugin.DefaultPollInterval, "how often to check for a kubelet restart and re-read --unhealthy-file")
	if err := c.Parse(fs, args); err != nil {
		return nil, err
	}
	return c, nil
}

func main() { simnode.Main("kquant-test-deviceplugin", run) }

func run(args []string) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	node, err := c.Setup(deviceplugin.FieldManager)
	if err != nil {
		return err
	}
	// NVIDIA's mixed strategy: whole GPUs under --resource-name, the MIG
	// devices of MIG-enabled GPUs under nvidia.com/mig-<profile>, each
	// resource its own plugin (its own socket and registration).
	profiles := slices.Sorted(maps.Keys(deviceplugin.MIGDevices(c.NodeName, node.Spec)))
	var plugins []*deviceplugin.Plugin
	for _, profile := range append([]string{""}, profiles...) {
		opts := deviceplugin.Options{
			NodeName:        c.NodeName,
			Spec:            node.Spec,
			MIGProfile:      profile,
			DevicePluginDir: c.dir,
			UnhealthyFile:   c.unhealthyFile,
			PollInterval:    c.pollInterval,
		}
		if profile == "" {
			opts.ResourceName = c.resourceName
		}
		plugin, err := deviceplugin.New(opts)
		if err != nil {
			return err
		}
		plugins = append(plugins, plugin)
	}

	ctx, stop := node.Context()
	defer stop()
	log := node.Log
	for _, p := range plugins {
		log.Info("Starting", "node", c.NodeName, "simulate", node.Spec.String(), "resource", p.ResourceName(), "devices", uuids(p.Devices()))
	}
	if node.Client == nil {
		log.Info("No --kubeconfig: the Node is not labelled")
	} else {
		go func() {
			err := deviceplugin.ApplyNodeLabels(ctx, node.Client, c.NodeName, deviceplugin.NodeLabels(node.Spec), labelRetryInterval)
			if err != nil && ctx.Err() == nil {
				log.Error(err, "Labelling the Node failed")
			}
		}()
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, p := range plugins {
		g.Go(func() error { return p.Run(ctx) })
	}
	return g.Wait()
}

func uuids(devices []deviceplugin.Device) []string {
	out := make([]string, 0, len(devices))
	for _, d := range devices {
		out = append(out, d.UUID)
	}
	return out
}
