// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package jointest makes the cluster-side objects the joiner's unit tests
// read from a fake clientset: a CA and a cluster-info ConfigMap signed for
// a token, as kubeadm and the bootstrapsigner controller make them.
package jointest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/seed"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	jws "k8s.io/cluster-bootstrap/token/jws"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"
)

// Token is a valid bootstrap token for tests.
const Token = "abcdef.0123456789abcdef"

// CA is a self-signed cluster CA.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte
}

// Hash is the CA's kubeadm pin.
func (c CA) Hash() string { return pubkeypin.Hash(c.Cert) }

// NewCA makes a CA.
func NewCA(t testing.TB) CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return CA{Cert: cert, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// ClusterInfo is kube-public/cluster-info naming server, signed for each
// of tokens.
func ClusterInfo(t testing.TB, ca CA, server string, tokens ...string) *corev1.ConfigMap {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters[""] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca.PEM}
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic},
		Data:       map[string]string{bootstrapapi.KubeConfigKey: string(raw)},
	}
	for _, tok := range tokens {
		Sign(t, cm, tok)
	}
	return cm
}

// Sign adds the token's detached JWS signature, as the bootstrapsigner does.
func Sign(t testing.TB, cm *corev1.ConfigMap, token string) {
	t.Helper()
	id, secret, _ := strings.Cut(token, ".")
	sig, err := jws.ComputeDetachedSignature(cm.Data[bootstrapapi.KubeConfigKey], id, secret)
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id] = sig
}

// TrustSeedFiles makes the joiner take the tests' seed files, which the
// test user owns, as root's.
func TrustSeedFiles(t *testing.T) {
	t.Helper()
	saved := seed.TrustedOwner
	seed.TrustedOwner = func(*os.File, os.FileInfo) (string, bool, error) { return "uid 0", true, nil }
	t.Cleanup(func() { seed.TrustedOwner = saved })
}
