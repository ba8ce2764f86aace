// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestGenerateChains(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	if err := generate(options{Dir: dir}, now); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.crt holds no certificate")
	}
	for _, tc := range []struct {
		name      string
		usage     x509.ExtKeyUsage
		dnsName   string
		wantOrg   string
		wantCN    string
		wantIPSAN string
	}{
		{name: "apiserver", usage: x509.ExtKeyUsageServerAuth, dnsName: "localhost", wantCN: "kube-apiserver", wantIPSAN: "127.0.0.1"},
		{name: "admin", usage: x509.ExtKeyUsageClientAuth, wantCN: "kquant-demo-admin", wantOrg: "system:masters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaf(t, dir, roots, now, leafWant{name: tc.name, usage: tc.usage, dnsName: tc.dnsName, cn: tc.wantCN, org: tc.wantOrg, ip: tc.wantIPSAN})
		})
	}
	for _, f := range []string{"sa.key", "sa.pub"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
}

// TestGenerateCluster checks the identities the local cluster's components need:
// the Node authorizer reads the kubelet's user and group, the built-in RBAC
// roles the components' users, and kubelets and pods reach the API server at
// the node's address and the kubernetes Service's.
func TestGenerateCluster(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	nodeIP := net.ParseIP("10.244.0.1")
	if err := generate(options{Dir: dir, Node: "kquant-node", NodeIP: nodeIP}, now); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	for _, tc := range []struct {
		name    string
		usage   x509.ExtKeyUsage
		wantCN  string
		wantOrg string
		wantIP  string
	}{
		{name: "apiserver", usage: x509.ExtKeyUsageServerAuth, wantCN: "kube-apiserver", wantIP: "10.244.0.1"},
		{name: "kubelet", usage: x509.ExtKeyUsageClientAuth, wantCN: "system:node:kquant-node", wantOrg: "system:nodes"},
		{name: "kubelet-serving", usage: x509.ExtKeyUsageServerAuth, wantCN: "system:node:kquant-node", wantIP: "10.244.0.1"},
		{name: "kueue-webhook", usage: x509.ExtKeyUsageServerAuth, wantCN: "kueue-webhook", wantIP: "10.244.0.1"},
		{name: "controller-manager", usage: x509.ExtKeyUsageClientAuth, wantCN: "system:kube-controller-manager"},
		{name: "scheduler", usage: x509.ExtKeyUsageClientAuth, wantCN: "system:kube-scheduler"},
		{name: "kube-proxy", usage: x509.ExtKeyUsageClientAuth, wantCN: "system:kube-proxy"},
		{name: "apiserver-kubelet-client", usage: x509.ExtKeyUsageClientAuth, wantCN: "kube-apiserver-kubelet-client", wantOrg: "system:masters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaf(t, dir, roots, now, leafWant{name: tc.name, usage: tc.usage, cn: tc.wantCN, org: tc.wantOrg, ip: tc.wantIP})
		})
	}
}

// leafWant is what one certificate must be.
type leafWant struct {
	name    string // file stem
	usage   x509.ExtKeyUsage
	dnsName string // verified when set
	cn, org string // org checked when set
	ip      string // among the IP SANs, when set
}

func checkLeaf(t *testing.T, dir string, roots *x509.CertPool, now time.Time, want leafWant) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, want.name+".crt"), filepath.Join(dir, want.name+".key"))
	if err != nil {
		t.Fatalf("loading key pair: %v", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: want.dnsName, KeyUsages: []x509.ExtKeyUsage{want.usage}, CurrentTime: now}); err != nil {
		t.Errorf("verify against ca.crt: %v", err)
	}
	if cert.Subject.CommonName != want.cn {
		t.Errorf("CN = %q, want %q", cert.Subject.CommonName, want.cn)
	}
	if want.org != "" && (len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != want.org) {
		t.Errorf("O = %v, want [%s]", cert.Subject.Organization, want.org)
	}
	if want.ip != "" && !slices.ContainsFunc(cert.IPAddresses, func(ip net.IP) bool { return ip.String() == want.ip }) {
		t.Errorf("IP SANs = %v, want %s among them", cert.IPAddresses, want.ip)
	}
}
