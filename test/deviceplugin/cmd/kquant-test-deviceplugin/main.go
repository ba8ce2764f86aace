package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/internal/logging"
	"github.com/kquant/kquant/test/deviceplugin"
)

// labelRetryInterval is how often the Node is tried while the kubelet has
// not registered it yet.
const labelRetryInterval = 2 * time.Second

// config is the command line.
type config struct {
	simulate, nodeName, resourceName, dir, kubeconfig, unhealthyFile string
	pollInterval                                                     time.Duration
	log                                                              logging.Options
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("kquant-test-deviceplugin", flag.ContinueOnError)
	fs.StringVar(&c.simulate, "simulate", "", "GPUs to advertise, as <product>:<count>[,...] (required); products: "+fmt.Sprint(simulate.Keys()))
	fs.StringVar(&c.nodeName, "node-name", defaultNodeName(), "node name, the same as the kquant agent's (default $NODE_NAME, else the host name in lower case, as the kubelet's)")
	fs.StringVar(&c.resourceName, "resource-name", deviceplugin.DefaultResourceName, "extended resource to advertise")
	fs.StringVar(&c.dir, "device-plugin-dir", "/var/lib/kubelet/device-plugins/", "the kubelet's device-plugin directory (where kubelet.sock is)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig for labelling the Node as GPU feature discovery would; none: no labels")
	fs.StringVar(&c.unhealthyFile, "unhealthy-file", "", "file listing GPUs (indexes or UUIDs, one per line) to report Unhealthy; re-read every --poll-interval")
	fs.DurationVar(&c.pollInterval, "poll-interval", deviceplugin.DefaultPollInterval, "how often to check for a kubelet restart and re-read --unhealthy-file")
	c.log.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.simulate == "" {
		return nil, errors.New("--simulate is required, for example --simulate H100:4")
	}
	return c, nil
}

func defaultNodeName() string {
	if n := os.Getenv("NODE_NAME"); n != "" {
		return n
	}
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return strings.ToLower(h)
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kquant-test-deviceplugin:", err)
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
	plugin, err := deviceplugin.New(deviceplugin.Options{
		NodeName:        c.nodeName,
		Spec:            spec,
		ResourceName:    c.resourceName,
		DevicePluginDir: c.dir,
		UnhealthyFile:   c.unhealthyFile,
		PollInterval:    c.pollInterval,
	})
	if err != nil {
		return err
	}
	var client kubernetes.Interface
	if c.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
		if err != nil {
			return fmt.Errorf("loading kubeconfig %s: %w", c.kubeconfig, err)
		}
		cfg.UserAgent = deviceplugin.FieldManager
		if client, err = kubernetes.NewForConfig(cfg); err != nil {
			return fmt.Errorf("making the API client: %w", err)
		}
	}

	ctx, stop := signal.NotifyContext(logr.NewContext(context.Background(), log), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("Starting", "node", c.nodeName, "simulate", spec.String(), "resource", c.resourceName, "gpus", uuids(plugin.Devices()))
	if client == nil {
		log.Info("No --kubeconfig: the Node is not labelled")
	} else {
		go func() {
			err := deviceplugin.ApplyNodeLabels(ctx, client, c.nodeName, deviceplugin.NodeLabels(spec), labelRetryInterval)
			if err != nil && ctx.Err() == nil {
				log.Error(err, "Labelling the Node failed")
			}
		}()
	}
	return plugin.Run(ctx)
}

func uuids(devices []deviceplugin.Device) []string {
	out := make([]string, 0, len(devices))
	for _, d := range devices {
		out = append(out, d.UUID)
	}
	return out
}
