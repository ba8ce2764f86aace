// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kquant/kquant/test/testenv"
)

// process is one child process, logging to a file.
type process struct {
	name string
	args []string
	log  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func startProcess(t *testing.T, dir, name string, args ...string) *process {
	t.Helper()
	p := &process{name: name, args: args, log: filepath.Join(dir, name+".log")}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening log of %s: %w", p.name, err)
	}
	fmt.Fprintf(f, "=== %s start %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(p.args, " "))
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group, so that a signal to the test does not reach it
	// and a kill reaches nothing else.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// signal sends sig and waits up to wait for the process to exit.
func (p *process) signal(sig syscall.Signal, wait time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signalling %s: %w", p.name, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(wait):
		return fmt.Errorf("%s did not exit within %s of %s", p.name, wait, sig)
	}
}

// kill is kill -9.
func (p *process) kill() { _ = p.signal(syscall.SIGKILL, 10*time.Second) }

// stop is a graceful SIGTERM, then SIGKILL.
func (p *process) stop() {
	if err := p.signal(syscall.SIGTERM, 30*time.Second); err != nil {
		p.kill()
	}
}

func (p *process) exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail is the end of the process's log, for failure messages.
func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// controlPlane is etcd and kube-apiserver as processes, restartable with
// the same data, ports and certificates.
type controlPlane struct {
	dir, assets                 string
	etcdPort, peerPort, apiPort int
	kubeconfig                  string
	etcd, api                   *process
}

func startControlPlane(t *testing.T, dir, assets, certsBin string) *controlPlane {
	t.Helper()
	cp := &controlPlane{dir: dir, assets: assets, etcdPort: testenv.FreeLocalPort(t), peerPort: testenv.FreeLocalPort(t), apiPort: testenv.FreeLocalPort(t)}
	pki := filepath.Join(dir, "pki")
	if out, err := exec.Command(certsBin, "-dir", pki).CombinedOutput(); err != nil {
		t.Fatalf("making certificates: %v\n%s", err, out)
	}
	cp.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(cp.kubeconfig, pki, cp.apiPort); err != nil {
		t.Fatal(err)
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", cp.etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", cp.peerPort)
	cp.etcd = startProcess(t, dir, "etcd", filepath.Join(assets, "etcd"),
		"--name=kquant-e2e", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kquant-e2e="+peerURL, "--unsafe-no-fsync=true")
	cp.api = startProcess(t, dir, "kube-apiserver", filepath.Join(assets, "kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", cp.apiPort),
		"--tls-cert-file="+filepath.Join(pki, "apiserver.crt"), "--tls-private-key-file="+filepath.Join(pki, "apiserver.key"),
		"--client-ca-file="+filepath.Join(pki, "ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(pki, "sa.pub"), "--service-account-signing-key-file="+filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24", "--authorization-mode=RBAC")
	cp.waitReady(t)
	return cp
}

// restart stops the API server and etcd (SIGTERM, as a rolling restart of
// the control plane would) and starts them again on the same data.
func (cp *controlPlane) restart(t *testing.T, down time.Duration) {
	t.Helper()
	cp.api.stop()
	cp.etcd.stop()
	time.Sleep(down)
	for _, p := range []*process{cp.etcd, cp.api} {
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
	}
	cp.waitReady(t)
}

func (cp *controlPlane) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := cp.kubectl(context.Background(), nil, "get", "--raw", "/readyz")
		if err == nil && strings.TrimSpace(out) == "ok" {
			return
		}
		if time.Now().After(deadline) || cp.api.exited() || cp.etcd.exited() {
			t.Fatalf("API server not ready: %v %s\netcd:\n%s\nkube-apiserver:\n%s", err, out, cp.etcd.tail(), cp.api.tail())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// kubectl runs kubectl against the control plane with stdin (may be nil).
func (cp *controlPlane) kubectl(ctx context.Context, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(cp.assets, "kubectl"),
		append([]string{"--kubeconfig=" + cp.kubeconfig, "--cache-dir=" + filepath.Join(cp.dir, "kube-cache")}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func writeKubeconfig(path, pki string, port int) error {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(pki, name))
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", name, err)
		}
		return base64.StdEncoding.EncodeToString(b), nil
	}
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	crt, err := read("admin.crt")
	if err != nil {
		return err
	}
	key, err := read("admin.key")
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: "https://127.0.0.1:%d", certificate-authority-data: %s}
users:
- name: admin
  user: {client-certificate-data: %s, client-key-data: %s}
contexts:
- name: e2e
  context: {cluster: e2e, user: admin}
current-context: e2e
`, port, ca, crt, key)
	return os.WriteFile(path, []byte(cfg), 0o600)
}

// buildBinaries builds manager, agent and democerts into dir, or takes
// manager and agent from KQUANT_E2E_BIN.
func buildBinaries(dir string) (bin string, certs string, err error) {
	root := testenv.RepoRoot()
	certs = filepath.Join(dir, "democerts")
	pkgs := []string{"./hack/democerts"}
	bin = os.Getenv("KQUANT_E2E_BIN")
	if bin == "" {
		bin = dir
		pkgs = append(pkgs, "./cmd/manager", "./cmd/agent")
	}
	cmd := exec.Command("go", append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	return bin, certs, nil
}
