package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/internal/logging"
	"github.com/kquant/kquant/test/dradriver"
)

// config is the command line.
type config struct {
	simulate, nodeName, driverName, domain, deviceClass, kubeconfig, kubeletDir, cdiDir string
	log                                                                                 logging.Options
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("kquant-test-dradriver", flag.ContinueOnError)
	fs.StringVar(&c.simulate, "simulate", "", "GPUs to publish, as <product>:<count>[,...] (required); products: "+fmt.Sprint(simulate.Keys()))
	fs.StringVar(&c.nodeName, "node-name", os.Getenv("NODE_NAME"), "node name, the same as the kquant agent's (default $NODE_NAME; required)")
	fs.StringVar(&c.driverName, "driver-name", dradriver.DefaultDriverName, "the DRA driver's name")
	fs.StringVar(&c.domain, "attribute-domain", dradriver.DefaultAttributeDomain, "domain of the devices' attributes (uuid, index, productName)")
	fs.StringVar(&c.deviceClass, "device-class", dradriver.DefaultDeviceClassName, "DeviceClass to apply, selecting the driver's devices; empty: none")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of the driver's API client (required)")
	fs.StringVar(&c.kubeletDir, "kubelet-dir", "/var/lib/kubelet", "the kubelet's root directory (plugins_registry and plugins/ live there)")
	fs.StringVar(&c.cdiDir, "cdi-dir", kubeletplugin.DefaultCDIDir, "where CDI specs go: a directory the container runtime reads")
	c.log.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.simulate == "":
		return nil, errors.New("--simulate is required, for example --simulate H100:4")
	case c.nodeName == "":
		return nil, errors.New("--node-name is required")
	case c.kubeconfig == "":
		return nil, errors.New("--kubeconfig is required")
	}
	return c, nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kquant-test-dradriver:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	c, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	spec, err := simulate.Parse(c.simulate)
	if err != nil {
		return err
	}
	log, err := c.log.New(os.Stderr)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig %s: %w", c.kubeconfig, err)
	}
	cfg.UserAgent = dradriver.FieldManager
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making the API client: %w", err)
	}
	driver, err := dradriver.New(dradriver.Options{
		NodeName: c.nodeName, Spec: spec, DriverName: c.driverName, AttributeDomain: c.domain, CDIDir: c.cdiDir,
	})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(logr.NewContext(context.Background(), log), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("Starting", "node", c.nodeName, "simulate", spec.String(), "driver", c.driverName, "attributeDomain", c.domain, "deviceClass", c.deviceClass)
	if c.deviceClass != "" {
		if err := dradriver.ApplyDeviceClass(ctx, client, c.deviceClass, c.driverName); err != nil {
			return err
		}
	}
	registry, data := filepath.Join(c.kubeletDir, "plugins_registry"), filepath.Join(c.kubeletDir, "plugins", c.driverName)
	for _, dir := range []string{registry, data} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("making %s: %w", dir, err)
		}
	}
	return driver.Run(ctx, client, kubeletplugin.RegistrarDirectoryPath(registry), kubeletplugin.PluginDataDirectoryPath(data))
}
