// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package testenv starts a real kube-apiserver and etcd (controller-runtime's
// envtest) with kquant's CRDs installed, for tests of anything the API server
// does: admission, defaults, the status subresource, watches and controllers.
//
// The binaries come from hack/envtest-assets.sh, which builds them once from Go
// modules and caches them; KUBEBUILDER_ASSETS overrides where they are.
package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kquantscheme "github.com/kquant/kquant/api/scheme"
)

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is a direct (uncached) client with kquant's scheme.
	Client client.Client
	// Scheme knows the built-in kinds and kquant's.
	Scheme *apiruntime.Scheme
	// AssetsDir holds kube-apiserver, etcd and kubectl.
	AssetsDir string

	env *envtest.Environment
}

// RepoRootEnv names the repository root for test binaries run away from the
// tree they were built in (the scale harness on another machine).
const RepoRootEnv = "KQUANT_REPO_ROOT"

// RepoRoot is the root of the kquant repository: $KQUANT_REPO_ROOT when set,
// else the tree this package was built from when it still exists, else the
// nearest directory above the working directory that holds config/crd/bases
// (a test binary compiled elsewhere and run from inside a copy of the tree).
func RepoRoot() string {
	if dir := os.Getenv(RepoRootEnv); dir != "" {
		return filepath.Clean(dir)
	}
	_, file, _, _ := runtime.Caller(0)
	built := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	if isRepoRoot(built) {
		return built
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if isRepoRoot(dir) {
				return dir
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return built
}

func isRepoRoot(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "config", "crd", "bases"))
	return err == nil && st.IsDir()
}

// AssetsDir returns the directory with the control-plane binaries, building them
// with hack/envtest-assets.sh when KUBEBUILDER_ASSETS is not set.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command(filepath.Join(RepoRoot(), "hack", "envtest-assets.sh"))
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building envtest assets with hack/envtest-assets.sh: %w", err)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Start starts etcd and kube-apiserver and installs the CRDs from
// config/crd/bases, the same files the Helm chart and kustomize ship.
func Start() (*Env, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	s, err := kquantscheme.New()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
	}
	// On top of the default plugins: blockOwnerDeletion needs update on the
	// owner's finalizers, as on OpenShift, so that a missing permission
	// fails a test instead of a user's cluster.
	env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest control plane from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return &Env{Config: cfg, Client: c, Scheme: s, AssetsDir: assets, env: env}, nil
}

// ForTest starts a control plane for one test and stops it when the test
// ends; under -short the test is skipped, since it needs the control
// plane's binaries.
func ForTest(t testing.TB) *Env {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	env, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return env
}

// RunPackage is the TestMain of a package whose tests share one control
// plane: it starts it, hands it to set (the package's variable), runs the
// tests, stops it and exits with their code.
func RunPackage(m *testing.M, set func(*Env)) {
	env, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	set(env)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	if err := e.env.Stop(); err != nil {
		return fmt.Errorf("stopping envtest control plane: %w", err)
	}
	return nil
}

// Kubeconfig writes a kubeconfig for an administrator to path, for kubectl.
func (e *Env) Kubeconfig(path string) error {
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: "kquant-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding admin user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering kubeconfig: %w", err)
	}
	return os.WriteFile(path, data, 0o600)
}

// UserConfig returns a config that reaches the API server as user name, in
// groups, authenticated by a client certificate the control plane's CA signed:
// a real user that RBAC and admission policies see as they would see a person,
// where impersonation would need the caller's own rights to impersonate.
func (e *Env) UserConfig(name string, groups ...string) (*rest.Config, error) {
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	return user.Config(), nil
}

// KubectlPath is the kubectl built with the control plane.
func (e *Env) KubectlPath() string { return filepath.Join(e.AssetsDir, "kubectl") }

// CreateNamespace creates a namespace with a generated name, so that each test
// works in its own.
func (e *Env) CreateNamespace(ctx context.Context, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return "", fmt.Errorf("creating namespace %s-*: %w", prefix, err)
	}
	return ns.Name, nil
}
