package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestGenerateChains(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	if err := generate(dir, now); err != nil {
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
			pair, err := tls.LoadX509KeyPair(filepath.Join(dir, tc.name+".crt"), filepath.Join(dir, tc.name+".key"))
			if err != nil {
				t.Fatalf("loading key pair: %v", err)
			}
			cert, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: tc.dnsName, KeyUsages: []x509.ExtKeyUsage{tc.usage}, CurrentTime: now}); err != nil {
				t.Errorf("verify against ca.crt: %v", err)
			}
			if cert.Subject.CommonName != tc.wantCN {
				t.Errorf("CN = %q, want %q", cert.Subject.CommonName, tc.wantCN)
			}
			if tc.wantOrg != "" && (len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != tc.wantOrg) {
				t.Errorf("O = %v, want [%s]", cert.Subject.Organization, tc.wantOrg)
			}
			if tc.wantIPSAN != "" && (len(cert.IPAddresses) == 0 || cert.IPAddresses[0].String() != tc.wantIPSAN) {
				t.Errorf("IP SANs = %v, want %s first", cert.IPAddresses, tc.wantIPSAN)
			}
		})
	}
	for _, f := range []string{"sa.key", "sa.pub"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
}
