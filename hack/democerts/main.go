// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Command democerts writes the certificates and keys of the local control planes,
// for machines without openssl. All keys are ECDSA P-256, PEM-encoded.
//
// For `make demo` (-dir only): a CA, the API server's serving certificate
// (127.0.0.1, localhost, the kubernetes Service names), an administrator's client
// certificate (group system:masters) and the service-account signing key pair.
//
// For `make cluster` (-node and -node-ip as well): the API server also serves the
// node's address and the first Service address, and every component gets its own
// identity, so that the Node authorizer, NodeRestriction and RBAC treat each one
// as on a kubeadm cluster: the kubelet's client (system:node:<node>) and serving
// certificates, kube-controller-manager, kube-scheduler, kube-proxy, and the API
// server's client certificate for kubelets; and Kueue's webhook server
// (serving the node's address).
//
//	go run ./hack/democerts -dir .demo/pki
//	go run ./hack/democerts -dir .cluster/pki -node kquant-node -node-ip 10.244.0.1
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// options says what to generate; a zero Node generates the demo's set only.
type options struct {
	Dir    string
	Node   string
	NodeIP net.IP
}

func main() {
	var o options
	var nodeIP string
	flag.StringVar(&o.Dir, "dir", ".demo/pki", "directory to write the files to")
	flag.StringVar(&o.Node, "node", "", "node name: also write the kubelet's and the cluster components' certificates")
	flag.StringVar(&nodeIP, "node-ip", "", "the node's address, served by the API server and the kubelet (with -node)")
	flag.Parse()
	if o.Node != "" {
		if o.NodeIP = net.ParseIP(nodeIP); o.NodeIP == nil {
			fmt.Fprintf(os.Stderr, "democerts: -node needs -node-ip, an IP address (got %q)\n", nodeIP)
			os.Exit(2)
		}
	}
	if err := generate(o, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "democerts:", err)
		os.Exit(1)
	}
}

// leaf is one certificate signed by the CA.
type leaf struct {
	name  string // file name stem
	cert  *x509.Certificate
	usage x509.ExtKeyUsage
}

// generate writes ca.{crt,key}, apiserver.{crt,key}, admin.{crt,key} and
// sa.{key,pub} to o.Dir, and with o.Node the cluster's identities (see the
// package comment).
func generate(o options, now time.Time) error {
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return err
	}
	caKey, err := newKey(o.Dir, "ca")
	if err != nil {
		return err
	}
	serials := &serialSource{base: now.UnixNano()}
	caTmpl := template(now, serials, pkix.Name{CommonName: "kquant-demo-ca"})
	caTmpl.IsCA = true
	caTmpl.BasicConstraintsValid = true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("signing the CA: %w", err)
	}
	if err := writePEM(filepath.Join(o.Dir, "ca.crt"), "CERTIFICATE", caDER, 0o644); err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}

	server := template(now, serials, pkix.Name{CommonName: "kube-apiserver"})
	server.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	// 10.0.0.1 and 10.96.0.1: the first Service address of the API server's
	// default range and of the range the local cluster uses.
	server.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1"), net.ParseIP("10.96.0.1")}
	leaves := []leaf{
		{name: "apiserver", cert: server, usage: x509.ExtKeyUsageServerAuth},
		{name: "admin", cert: template(now, serials, pkix.Name{CommonName: "kquant-demo-admin", Organization: []string{"system:masters"}}), usage: x509.ExtKeyUsageClientAuth},
	}
	if o.Node != "" {
		server.IPAddresses = append(server.IPAddresses, o.NodeIP)
		leaves = append(leaves, clusterLeaves(o, now, serials)...)
	}
	for _, l := range leaves {
		if err := sign(o.Dir, l, ca, caKey); err != nil {
			return err
		}
	}

	saKey, err := newKey(o.Dir, "sa")
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	return writePEM(filepath.Join(o.Dir, "sa.pub"), "PUBLIC KEY", pub, 0o644)
}

// clusterLeaves are the identities of a one-node cluster's components, named
// as the built-in RBAC roles and the Node authorizer expect them.
func clusterLeaves(o options, now time.Time, serials *serialSource) []leaf {
	client := func(name, cn string, orgs ...string) leaf {
		return leaf{name: name, cert: template(now, serials, pkix.Name{CommonName: cn, Organization: orgs}), usage: x509.ExtKeyUsageClientAuth}
	}
	kubeletServing := template(now, serials, pkix.Name{CommonName: "system:node:" + o.Node, Organization: []string{"system:nodes"}})
	kubeletServing.DNSNames = []string{o.Node, "localhost"}
	kubeletServing.IPAddresses = []net.IP{o.NodeIP, net.ParseIP("127.0.0.1")}
	// Kueue's webhook server runs on the node, and the API server calls it
	// at the node's address.
	kueueWebhook := template(now, serials, pkix.Name{CommonName: "kueue-webhook"})
	kueueWebhook.IPAddresses = []net.IP{o.NodeIP}
	return []leaf{
		{name: "kueue-webhook", cert: kueueWebhook, usage: x509.ExtKeyUsageServerAuth},
		client("kubelet", "system:node:"+o.Node, "system:nodes"),
		{name: "kubelet-serving", cert: kubeletServing, usage: x509.ExtKeyUsageServerAuth},
		client("controller-manager", "system:kube-controller-manager"),
		client("scheduler", "system:kube-scheduler"),
		client("kube-proxy", "system:kube-proxy"),
		// The API server authenticates to kubelets (logs, exec) with this one;
		// the kubelet's webhook authorizer asks the API server about it.
		client("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"),
	}
}

func sign(dir string, l leaf, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := newKey(dir, l.name)
	if err != nil {
		return err
	}
	l.cert.ExtKeyUsage = []x509.ExtKeyUsage{l.usage}
	l.cert.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, l.cert, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("signing %s: %w", l.name, err)
	}
	return writePEM(filepath.Join(dir, l.name+".crt"), "CERTIFICATE", der, 0o644)
}

// serialSource hands out distinct serial numbers within one generate call.
type serialSource struct {
	base int64
	next int64
}

func template(now time.Time, serials *serialSource, subject pkix.Name) *x509.Certificate {
	serials.next++
	return &x509.Certificate{
		SerialNumber: big.NewInt(serials.base + serials.next),
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
	}
}

// newKey makes an ECDSA P-256 key and writes it to <dir>/<name>.key (PKCS #8).
func newKey(dir, name string) (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating %s key: %w", name, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return key, writePEM(filepath.Join(dir, name+".key"), "PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
