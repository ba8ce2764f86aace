// Command democerts writes the certificates and keys that `make demo`'s
// kube-apiserver needs, for machines without openssl: a CA, the API server's
// serving certificate (127.0.0.1, localhost, the kubernetes Service names), an
// administrator's client certificate (group system:masters) and the
// service-account signing key pair. All keys are ECDSA P-256, PEM-encoded.
//
//	go run ./hack/democerts -dir .demo/pki
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

func main() {
	dir := flag.String("dir", ".demo/pki", "directory to write the files to")
	flag.Parse()
	if err := generate(*dir, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "democerts:", err)
		os.Exit(1)
	}
}

// generate writes ca.{crt,key}, apiserver.{crt,key}, admin.{crt,key} and
// sa.{key,pub} to dir.
func generate(dir string, now time.Time) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caKey, err := newKey(dir, "ca")
	if err != nil {
		return err
	}
	caTmpl := template(now, pkix.Name{CommonName: "kquant-demo-ca"})
	caTmpl.IsCA = true
	caTmpl.BasicConstraintsValid = true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("signing the CA: %w", err)
	}
	if err := writePEM(filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER, 0o644); err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}

	server := template(now, pkix.Name{CommonName: "kube-apiserver"})
	server.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	server.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
	server.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}
	admin := template(now, pkix.Name{CommonName: "kquant-demo-admin", Organization: []string{"system:masters"}})
	admin.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	for name, tmpl := range map[string]*x509.Certificate{"apiserver": server, "admin": admin} {
		key, err := newKey(dir, name)
		if err != nil {
			return err
		}
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("signing %s: %w", name, err)
		}
		if err := writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
	}

	saKey, err := newKey(dir, "sa")
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub, 0o644)
}

var serial int64

func template(now time.Time, subject pkix.Name) *x509.Certificate {
	serial++
	return &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano() + serial),
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
