// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kquant/kquant/test/testenv"
)

// tools holds the binaries and the control plane the tests drive.
type tools struct {
	root       string
	helm       string
	kubectl    string
	kubeconfig string
	// kubeVersion is the API server's version, given to helm so that the
	// chart's kubeVersion constraint is checked against the real server.
	kubeVersion string
	// home isolates helm's and kubectl's caches and config from the user's.
	home string
	env  *testenv.Env
}

// run runs a command and returns its stdout; a failure carries stderr.
func (tl *tools) run(stdin []byte, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = tl.root
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(tl.home, "helm-cache"),
		"HELM_CONFIG_HOME="+filepath.Join(tl.home, "helm-config"),
		"HELM_DATA_HOME="+filepath.Join(tl.home, "helm-data"),
	)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func (tl *tools) helmCmd(args ...string) (string, error) { return tl.run(nil, tl.helm, args...) }

func (tl *tools) kubectlCmd(stdin []byte, args ...string) (string, error) {
	args = append([]string{"--kubeconfig", tl.kubeconfig, "--cache-dir", filepath.Join(tl.home, "kube-cache")}, args...)
	return tl.run(stdin, tl.kubectl, args...)
}

// dryRun applies manifests with server-side dry-run and returns kubectl's
// report, one line per object.
func (tl *tools) dryRun(manifests []byte) (string, error) {
	return tl.kubectlCmd(manifests, "apply", "--server-side", "--dry-run=server", "--field-manager=kquant-chart-test", "-f", "-")
}

// findHelm returns $HELM, or bin/helm built from hack/tools/helm by `make helm`
// (which rebuilds it only when that module changed).
func findHelm(root string) (string, error) {
	if p := os.Getenv("HELM"); p != "" {
		return p, nil
	}
	cmd := exec.Command("make", "--no-print-directory", "-s", "helm")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building helm with `make helm`: %w", err)
	}
	return filepath.Join(root, "bin", "helm"), nil
}

// parseObjects decodes a multi-document YAML stream, skipping empty documents.
func parseObjects(manifests []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// key names an object as kubectl does: Kind/namespace/name, or Kind/name for
// cluster-scoped objects.
func key(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return o.GetKind() + "/" + ns + "/" + o.GetName()
	}
	return o.GetKind() + "/" + o.GetName()
}

func keys(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, key(o))
	}
	sort.Strings(out)
	return out
}

func byKey(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := make(map[string]*unstructured.Unstructured, len(objs))
	for _, o := range objs {
		m[key(o)] = o
	}
	return m
}

// readGeneratedRules returns the rules of the ClusterRole in a controller-gen
// RBAC file.
func readGeneratedRules(t *testing.T, path string) []any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	objs, err := parseObjects(data)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" {
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			return rules
		}
	}
	t.Fatalf("%s has no ClusterRole", path)
	return nil
}

// startTools finds helm, starts the control plane and writes an admin
// kubeconfig; stop tears it all down.
func startTools() (*tools, func(), error) {
	root := testenv.RepoRoot()
	helm, err := findHelm(root)
	if err != nil {
		return nil, nil, err
	}
	env, err := testenv.Start()
	if err != nil {
		return nil, nil, err
	}
	home, err := os.MkdirTemp("", "kquant-chart-test-")
	if err != nil {
		_ = env.Stop()
		return nil, nil, err
	}
	stop := func() {
		_ = env.Stop()
		_ = os.RemoveAll(home)
	}
	tl := &tools{env: env, root: root, helm: helm, kubectl: env.KubectlPath(), kubeconfig: filepath.Join(home, "kubeconfig"), home: home}
	if err := env.Kubeconfig(tl.kubeconfig); err != nil {
		stop()
		return nil, nil, err
	}
	out, err := tl.kubectlCmd(nil, "version", "-o", "json")
	if err != nil {
		stop()
		return nil, nil, err
	}
	var v struct {
		ServerVersion struct {
			GitVersion string `json:"gitVersion"`
		} `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.ServerVersion.GitVersion == "" {
		stop()
		return nil, nil, fmt.Errorf("reading the server version from kubectl version: %v: %s", err, out)
	}
	tl.kubeVersion = v.ServerVersion.GitVersion
	return tl, stop, nil
}
