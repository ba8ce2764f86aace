// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/kquant/kquant/test/dradriver"
	"github.com/kquant/kquant/test/simnode"
)

// config is the command line.
type config struct {
	simnode.Flags
	driverName, domain, deviceClass, kubeletDir, cdiDir string
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("kquant-test-dradriver", flag.ContinueOnError)
	c.AddFlags(fs, "kubeconfig of the driver's API client (required)")
	fs.StringVar(&c.driverName, "driver-name", dradriver.DefaultDriverName, "the DRA driver's name")
	fs.StringVar(&c.domain, "attribute-domain", dradriver.DefaultAttributeDomain, "domain of the devices' attributes (uuid, index, productName)")
	fs.StringVar(&c.deviceClass, "device-class", dradriver.DefaultDeviceClassName, "DeviceClass to apply, selecting the driver's devices; empty: none")
	fs.StringVar(&c.kubeletDir, "kubelet-dir", "/var/lib/kubelet", "the kubelet's root directory (plugins_registry and plugins/ live there)")
	fs.StringVar(&c.cdiDir, "cdi-dir", kubeletplugin.DefaultCDIDir, "where CDI specs go: a directory the container runtime reads")
	if err := c.Parse(fs, args); err != nil {
		return nil, err
	}
	if c.Kubeconfig == "" {
		return nil, errors.New("--kubeconfig is required")
	}
	return c, nil
}

func main() { simnode.Main("kquant-test-dradriver", run) }

func run(args []string) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	node, err := c.Setup(dradriver.FieldManager)
	if err != nil {
		return err
	}
	driver, err := dradriver.New(dradriver.Options{
		NodeName: c.NodeName, Spec: node.Spec, DriverName: c.driverName, AttributeDomain: c.domain, CDIDir: c.cdiDir,
	})
	if err != nil {
		return err
	}
	ctx, stop := node.Context()
	defer stop()
	node.Log.Info("Starting", "node", c.NodeName, "simulate", node.Spec.String(), "driver", c.driverName,
		"attributeDomain", c.domain, "deviceClass", c.deviceClass)
	if c.deviceClass != "" {
		if err := dradriver.ApplyDeviceClass(ctx, node.Client, c.deviceClass, c.driverName); err != nil {
			return err
		}
	}
	registry, data := filepath.Join(c.kubeletDir, "plugins_registry"), filepath.Join(c.kubeletDir, "plugins", c.driverName)
	for _, dir := range []string{registry, data} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("making %s: %w", dir, err)
		}
	}
	return driver.Run(ctx, node.Client, kubeletplugin.RegistrarDirectoryPath(registry), kubeletplugin.PluginDataDirectoryPath(data))
}
