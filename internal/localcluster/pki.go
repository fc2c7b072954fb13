// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
)

// pki writes a cluster's certificates into dir with kubeadm's file names
// (each through safefile: never through a link planted at the name)
// (ca.crt, ca.key, apiserver.crt, sa.key, ...), since kubeadm's phases read
// the CA from certificatesDir. ECDSA P-256 keeps it to milliseconds.
type pki struct {
	dir    string
	caCert *x509.Certificate
	caKey  crypto.Signer
}

// leaf is a certificate the control plane needs, signed by the cluster CA.
type leaf struct {
	name string // file name without .crt/.key
	cn   string
	orgs []string
	sans []string // set for a serving certificate; nil for a client one
	// alsoClient: a serving certificate that is a client's too, as
	// kubeadm makes etcd's: a peer presents it both ways, and etcd's gRPC
	// gateway dials its own server with the server certificate.
	alsoClient bool
}

// newPKI makes the cluster CA, the leaves and the service-account key pair.
func newPKI(dir string, leaves []leaf) (*pki, error) {
	p, err := newCA(dir, "kubernetes", leaves)
	if err != nil {
		return nil, err
	}
	if err := p.serviceAccountKey(); err != nil {
		return nil, fmt.Errorf("pki: service-account key: %w", err)
	}
	return p, nil
}

// newEtcdPKI makes etcd's own CA in dir (kubeadm's pki/etcd) and its
// leaves: etcd trusts every client certificate its CA signed, so that CA
// must sign nothing else (the cluster CA signs every node's client
// certificate).
func newEtcdPKI(dir string) (*pki, error) {
	return newCA(dir, "etcd-ca", []leaf{
		{name: "server", cn: "kube-etcd", sans: []string{"127.0.0.1", "localhost"}, alsoClient: true},
		{name: "peer", cn: "kube-etcd-peer", sans: []string{"127.0.0.1", "localhost"}, alsoClient: true},
		{name: "apiserver-etcd-client", cn: "kube-apiserver-etcd-client"},
		// The control plane's own health checks.
		{name: "healthcheck-client", cn: "kube-etcd-healthcheck-client"},
	})
}

// newCA makes a CA named cn in dir and the leaves it signs.
func newCA(dir, cn string, leaves []leaf) (*pki, error) {
	// Its parent exists (the control plane's directory, or pki/ for
	// etcd's); a link at its name is refused, not followed.
	if err := safefile.MkdirAll(filepath.Dir(dir), filepath.Base(dir), 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	p := &pki{dir: dir, caKey: key}
	if p.caCert, err = x509.ParseCertificate(der); err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	if err := p.write("ca", der, key); err != nil {
		return nil, err
	}
	for _, l := range leaves {
		if err := p.issue(l); err != nil {
			return nil, fmt.Errorf("pki: %s: %w", l.name, err)
		}
	}
	return p, nil
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

func (p *pki) issue(l leaf) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: l.cn, Organization: l.orgs},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if l.sans != nil {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		if l.alsoClient {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		}
		for _, s := range l.sans {
			if ip := net.ParseIP(s); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, s)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return err
	}
	return p.write(l.name, der, key)
}

func (p *pki) write(name string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := safefile.WriteFile(p.path(name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return safefile.WriteFile(p.path(name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// serviceAccountKey writes sa.key and sa.pub, the pair that signs and
// verifies service-account tokens.
func (p *pki) serviceAccountKey() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := safefile.WriteFile(p.path("sa.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return safefile.WriteFile(p.path("sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644)
}

// kubeconfig writes a kubeconfig for server that authenticates with the
// client certificate of leaf name.
func (p *pki) kubeconfig(path, server, name string) error {
	var data [3]string
	for i, f := range []string{"ca.crt", name + ".crt", name + ".key"} {
		b, err := os.ReadFile(p.path(f))
		if err != nil {
			return fmt.Errorf("kubeconfig %s: %w", path, err)
		}
		data[i] = base64.StdEncoding.EncodeToString(b)
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster:
    server: %s
    certificate-authority-data: %s
contexts:
- name: %s@kubernetes
  context: {cluster: kubernetes, user: %s}
current-context: %s@kubernetes
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
`, server, data[0], name, name, name, name, data[1], data[2])
	if err := safefile.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return nil
}
