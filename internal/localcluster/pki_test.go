// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// etcd's PKI, served the way etcd serves it (its server certificate,
// client certificates of its own CA required): the API server's and the
// health check's client certificates are let in; no certificate and the
// cluster CA's admin certificate (the CA that signs every node's) are not.
func TestEtcdPKIAdmitsOnlyItsOwnClients(t *testing.T) {
	dir := t.TempDir()
	cluster, err := newPKI(filepath.Join(dir, "pki"), []leaf{{name: "admin", cn: "kubernetes-admin", orgs: []string{"system:masters"}}})
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := newEtcdPKI(filepath.Join(dir, "pki", "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	pool := func(p *pki) *x509.CertPool {
		pem, err := os.ReadFile(p.path("ca.crt"))
		if err != nil {
			t.Fatal(err)
		}
		cp := x509.NewCertPool()
		cp.AppendCertsFromPEM(pem)
		return cp
	}
	pair := func(p *pki, name string) tls.Certificate {
		c, err := tls.LoadX509KeyPair(p.path(name+".crt"), p.path(name+".key"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"health":"true"}`) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair(etcd, "server")}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool(etcd)}
	srv.StartTLS()
	defer srv.Close()
	get := func(certs ...tls.Certificate) error {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool(etcd), Certificates: certs}}}
		resp, err := c.Get(srv.URL + "/health") // https://127.0.0.1:PORT, a name on the server certificate
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for _, name := range []string{"apiserver-etcd-client", "healthcheck-client", "server", "peer"} {
		if err := get(pair(etcd, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := get(); err == nil {
		t.Error("a client without a certificate was let in")
	}
	if err := get(pair(cluster, "admin")); err == nil {
		t.Error("the cluster CA's admin certificate was let in")
	}
}
