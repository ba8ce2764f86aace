// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantscheme "github.com/kquant/kquant/api/scheme"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/testenv"
	"github.com/kquant/kquant/test/wait"
)

const (
	// node, release and systemNamespace are what hack/cluster.sh sets up.
	node            = "kquant-node"
	release         = "kquant"
	systemNamespace = "kquant-system"
	// simulatedGPUs is the device plugin's and the agents' count of whole
	// GPUs (H100:4), as nvidia.com/gpu.
	simulatedGPUs = 4
	// migGPUs is the count of MIG-partitioned GPUs (A100/mig:1, index 4), each
	// with migProfiles' MIG devices, advertised as nvidia.com/mig-<profile>.
	migGPUs = 1
	// containerdSocket is the local cluster's runtime endpoint.
	containerdSocket = "unix:///run/kquant-cluster/containerd.sock"
)

// cluster is the running local cluster and the tools that drive it.
type cluster struct {
	dir        string // .cluster
	kubeconfig string
	kubectlBin string
	helmBin    string
	crictlBin  string
	config     *rest.Config
	c          client.Client
}

func connect(t *testing.T) *cluster {
	t.Helper()
	root := testenv.RepoRoot()
	dir := os.Getenv("KQUANT_CLUSTER_DIR")
	if dir == "" {
		dir = filepath.Join(root, ".cluster")
	}
	cl := &cluster{dir: dir, kubeconfig: filepath.Join(dir, "kubeconfig"), helmBin: filepath.Join(root, "bin", "helm")}
	if _, err := os.Stat(cl.kubeconfig); err != nil {
		t.Fatalf("no local cluster (run make cluster cluster-install, or make cluster-e2e): %v", err)
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	cl.kubectlBin = filepath.Join(assets, "kubectl")
	nodeAssets, err := script(root, "hack/cluster-assets.sh")
	if err != nil {
		t.Fatal(err)
	}
	cl.crictlBin = filepath.Join(nodeAssets, "crictl")
	if cl.config, err = clientcmd.BuildConfigFromFlags("", cl.kubeconfig); err != nil {
		t.Fatal(err)
	}
	s, err := kquantscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	if cl.c, err = client.New(cl.config, client.Options{Scheme: s}); err != nil {
		t.Fatal(err)
	}
	return cl
}

// script runs a repository script and returns its trimmed stdout.
func script(root, name string) (string, error) {
	cmd := exec.Command(filepath.Join(root, name))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("running %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// run runs a command with a deadline and returns its stdout; its stderr
// goes into the error, or into the log when the command succeeds.
func run(ctx context.Context, stdin []byte, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String() + stderr.String(), fmt.Errorf("%s %s: %w\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func (cl *cluster) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t.Context(), nil, cl.kubectlBin, append([]string{"--kubeconfig", cl.kubeconfig}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// apply applies manifests (files, directories or "-" with stdin) in ns.
func (cl *cluster) apply(t *testing.T, ns string, stdin []byte, files ...string) {
	t.Helper()
	args := []string{"--kubeconfig", cl.kubeconfig, "apply", "-n", ns}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	if _, err := run(t.Context(), stdin, cl.kubectlBin, args...); err != nil {
		t.Fatal(err)
	}
}

// helm runs bin/helm against the cluster; the error is returned, since some
// steps expect helm to fail.
func (cl *cluster) helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return run(t.Context(), nil, cl.helmBin, append([]string{"--kubeconfig", cl.kubeconfig}, args...)...)
}

// chartArgs are the arguments hack/cluster.sh installs the chart with; an
// upgrade keeps them and adds its own --set.
func chartArgs(extra ...string) []string {
	root := testenv.RepoRoot()
	return append([]string{
		"upgrade", "--install", release, filepath.Join(root, "charts", "kquant"),
		"--namespace", systemNamespace, "--reuse-values", "--wait",
	}, extra...)
}

func (cl *cluster) crictl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t.Context(), nil, cl.crictlBin, append([]string{"--runtime-endpoint", containerdSocket}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// namespace creates a fresh namespace for one scenario and waits until a pod
// may be created in it: Kueue's pod webhook reads namespaces from a cache of
// its own and refuses the pods of one it does not know yet ("Namespace ...
// not found"). A server-side dry run passes through the webhooks and
// creates nothing.
func (cl *cluster) namespace(t *testing.T, name string) string {
	t.Helper()
	cl.kubectl(t, "create", "namespace", name)
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "namespace-probe", Namespace: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "kquant.local/pause:3.10"}}},
	}
	eventually(t, 30*time.Second, "a pod admitted in namespace "+name, func() error {
		return cl.c.Create(t.Context(), probe.DeepCopy(), client.DryRunAll)
	})
	return name
}

// eventually polls f until it returns nil.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	wait.For(t, timeout, what, f)
}

// componentPods lists the chart's pods of one component (manager or agent).
func (cl *cluster) componentPods(t *testing.T, component string) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	if err := cl.c.List(t.Context(), pods, client.InNamespace(systemNamespace),
		client.MatchingLabels{"app.kubernetes.io/instance": release, "app.kubernetes.io/component": component}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// readyPod waits for exactly one Ready, not terminating pod of component and
// returns it.
func (cl *cluster) readyPod(t *testing.T, component string, timeout time.Duration) corev1.Pod {
	t.Helper()
	var ready corev1.Pod
	eventually(t, timeout, "one Ready "+component+" pod", func() error {
		var found []corev1.Pod
		for _, p := range cl.componentPods(t, component) {
			if p.DeletionTimestamp == nil && podReady(&p) {
				found = append(found, p)
			}
		}
		if len(found) != 1 {
			return fmt.Errorf("%d Ready %s pods", len(found), component)
		}
		ready = found[0]
		return nil
	})
	return ready
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitJob waits until the job in ns reaches phase.
func (cl *cluster) waitJob(t *testing.T, ns, name string, phase v1alpha1.JobPhase, timeout time.Duration) *v1alpha1.QuantJob {
	t.Helper()
	return wait.JobPhase(t, cl.c, ns, name, phase, timeout)
}

func (cl *cluster) runs(t *testing.T, ns string) []v1alpha1.QuantRun {
	t.Helper()
	list := &v1alpha1.QuantRunList{}
	if err := cl.c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// decode decodes a tool's JSON output.
func decode(t *testing.T, out string, into any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), into); err != nil {
		t.Fatalf("decoding %.300q: %v", out, err)
	}
}
