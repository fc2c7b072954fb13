// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// testdata/pki holds a cluster's certificates for the tests only (made
// once by --role init into an empty directory): the CAs and the
// service-account key KubeadmControlPlane would generate.
const goldenPKI = "testdata/pki"

// The files Cluster API hands a control-plane Machine, in its order
// (Certificates.AsFiles), with their modes; each is the PKI directory's
// file of the same path below /etc/kubernetes/pki.
var controlPlaneCertFiles = []struct{ path, perm string }{
	{"/etc/kubernetes/pki/ca.crt", "0640"}, {"/etc/kubernetes/pki/ca.key", "0600"},
	{"/etc/kubernetes/pki/etcd/ca.crt", "0640"}, {"/etc/kubernetes/pki/etcd/ca.key", "0600"},
	{"/etc/kubernetes/pki/front-proxy-ca.crt", "0640"}, {"/etc/kubernetes/pki/front-proxy-ca.key", "0600"},
	{"/etc/kubernetes/pki/sa.pub", "0640"}, {"/etc/kubernetes/pki/sa.key", "0600"},
}

const (
	initConfig      = "/run/kubeadm/kubeadm.yaml"
	initCommand     = "kubeadm init --config /run/kubeadm/kubeadm.yaml"
	cpVersion       = "v1.37.2"
	cpEndpoint      = "10.0.2.2:6443"
	cpCertSAN       = "127.0.0.1"
	cpClusterName   = "kubenode-lab"
	initGolden      = "testdata/init-user-data.golden"
	cpJoinGolden    = "testdata/control-plane-join-user-data.golden"
	goldenPKIHashes = "testdata/pki-ca-hash" // the CA's hash, by openssl (see TestCACertHashFromPKI)
)

func initArgs(pki string) []string {
	return []string{"--role", "init", "--kubernetes-version", cpVersion, "--control-plane-endpoint", cpEndpoint,
		"--pki-dir", pki, "--api-server-cert-san", cpCertSAN, "--cluster-name", cpClusterName,
		"--ssh-user", "kubenode", "--ssh-authorized-key", goldenKey}
}

func controlPlaneJoinArgs(pki string) []string {
	return []string{"--role", "control-plane-join", "--kubernetes-version", cpVersion, "--api-server-endpoint", cpEndpoint,
		"--token-file", goldenTokenFile, "--pki-dir", pki, "--ssh-user", "kubenode", "--ssh-authorized-key", goldenKey}
}

// checkGolden compares got with the golden file, or rewrites it with -update.
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", golden)
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run Golden -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the rendering differs from %s (if Cluster API changed it, rerun with -update and review the diff):\n%s", golden, got)
	}
}

// TestGoldenInit and TestGoldenControlPlaneJoin: the control-plane user
// data for fixed inputs (testdata/pki's certificates) is byte for byte the
// golden file.
func TestGoldenInit(t *testing.T) {
	checkGolden(t, initGolden, render(t, initArgs(goldenPKI)))
}

func TestGoldenControlPlaneJoin(t *testing.T) {
	checkGolden(t, cpJoinGolden, render(t, controlPlaneJoinArgs(goldenPKI)))
}

// writeFilesOf reads the cloud-config back and returns its write_files by
// path, checking the header and that it is strict YAML of the keys known.
func writeFilesOf(t *testing.T, out []byte) (cloudConfig, map[string]int) {
	t.Helper()
	lines := strings.SplitN(string(out), "\n", 3)
	if len(lines) < 3 || lines[0] != "## template: jinja" || lines[1] != "#cloud-config" {
		t.Fatalf("the first lines are not `## template: jinja` and `#cloud-config`:\n%s", out)
	}
	var cc cloudConfig
	if err := yaml.UnmarshalStrict(out, &cc); err != nil {
		t.Fatalf("not YAML, or not the keys expected: %v\n%s", err, out)
	}
	files := map[string]int{}
	for i, f := range cc.WriteFiles {
		if _, twice := files[f.Path]; twice {
			t.Errorf("write_files has %s twice", f.Path)
		}
		files[f.Path] = i
	}
	return cc, files
}

// checkCertFiles: every certificate and key is in write_files, root's,
// with Cluster API's modes and the PKI directory's content.
func checkCertFiles(t *testing.T, cc cloudConfig, files map[string]int, pki string) {
	t.Helper()
	var order []int
	for _, want := range controlPlaneCertFiles {
		i, ok := files[want.path]
		if !ok {
			t.Errorf("write_files has no %s", want.path)
			continue
		}
		order = append(order, i)
		f := cc.WriteFiles[i]
		local, err := os.ReadFile(filepath.Join(pki, strings.TrimPrefix(want.path, "/etc/kubernetes/pki/")))
		if err != nil {
			t.Fatal(err)
		}
		if f.Owner != "root:root" || f.Permissions != want.perm || f.Content != string(local) {
			t.Errorf("%s: owner %s, permissions %s, content from the PKI directory: %v; want root:root %s", want.path, f.Owner, f.Permissions, f.Content == string(local), want.perm)
		}
	}
	if !slices.IsSorted(order) {
		t.Errorf("the certificates are not in Cluster API's order (CA, etcd CA, front-proxy CA, service account): write_files indexes %v", order)
	}
}

// kubeadmDocs splits a multi-document kubeadm file into its documents by kind.
func kubeadmDocs(t *testing.T, content string) map[string]map[string]any {
	t.Helper()
	docs := map[string]map[string]any{}
	for _, d := range strings.Split(content, "\n---\n") {
		d = strings.TrimPrefix(strings.TrimSpace(d), "---")
		if strings.TrimSpace(d) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, d)
		}
		kind, _ := m["kind"].(string)
		if m["apiVersion"] != "kubeadm.k8s.io/v1beta4" {
			t.Errorf("%s is %v, want kubeadm.k8s.io/v1beta4 (Kubernetes %s)", kind, m["apiVersion"], cpVersion)
		}
		docs[kind] = m
	}
	return docs
}

// TestInitStructure reads the init user data back as cloud-init and
// kubeadm would: the certificates, the ClusterConfiguration and
// InitConfiguration kubeadm init reads, and the runcmd that runs it and
// then writes the sentinel.
func TestInitStructure(t *testing.T) {
	out := render(t, initArgs(goldenPKI))
	cc, files := writeFilesOf(t, out)
	checkCertFiles(t, cc, files, goldenPKI)

	i, ok := files[initConfig]
	if !ok {
		t.Fatalf("write_files has no %s", initConfig)
	}
	if f := cc.WriteFiles[i]; f.Permissions != "0640" || f.Owner != "root:root" {
		t.Errorf("%s: %s %s, want root:root 0640", initConfig, f.Owner, f.Permissions)
	}
	docs := kubeadmDocs(t, cc.WriteFiles[i].Content)
	cluster, init := docs["ClusterConfiguration"], docs["InitConfiguration"]
	if cluster == nil || init == nil || len(docs) != 2 {
		t.Fatalf("%s holds %d documents, want a ClusterConfiguration and an InitConfiguration:\n%s", initConfig, len(docs), cc.WriteFiles[i].Content)
	}
	if cluster["controlPlaneEndpoint"] != cpEndpoint || cluster["kubernetesVersion"] != cpVersion || cluster["clusterName"] != cpClusterName {
		t.Errorf("ClusterConfiguration: endpoint %v, version %v, name %v; want %s, %s, %s", cluster["controlPlaneEndpoint"], cluster["kubernetesVersion"], cluster["clusterName"], cpEndpoint, cpVersion, cpClusterName)
	}
	sans, _ := cluster["apiServer"].(map[string]any)["certSANs"].([]any)
	if !slices.Equal(sans, []any{cpCertSAN}) {
		t.Errorf("apiServer.certSANs are %v, want [%s]", sans, cpCertSAN)
	}
	reg, _ := init["nodeRegistration"].(map[string]any)
	if reg["name"] != nodeNameWant {
		t.Errorf("nodeRegistration.name is %v, want %q", reg["name"], nodeNameWant)
	}
	if _, ok := init["bootstrapTokens"]; ok {
		t.Errorf("the InitConfiguration has bootstrap tokens: Cluster API makes them per Machine, later")
	}

	want := "'" + initCommand + "  && " + sentinel + "'"
	if !slices.Contains(cc.RunCmd, strings.Trim(want, "'")) && !strings.Contains(string(out), "  - "+want+"\n") {
		t.Errorf("runcmd has no %s: %q", want, cc.RunCmd)
	}
	if len(cc.Users) != 1 || cc.Users[0].Name != "kubenode" {
		t.Errorf("users: %+v, want kubenode", cc.Users)
	}
}

// TestControlPlaneJoinStructure: the joining control plane gets every
// certificate and a JoinConfiguration with a controlPlane section, whose
// discovery pins the CA of the PKI directory; no uninitialized taint (that
// is the workers').
func TestControlPlaneJoinStructure(t *testing.T) {
	out := render(t, controlPlaneJoinArgs(goldenPKI))
	cc, files := writeFilesOf(t, out)
	checkCertFiles(t, cc, files, goldenPKI)
	i, ok := files[joinConfig]
	if !ok {
		t.Fatalf("write_files has no %s", joinConfig)
	}
	docs := kubeadmDocs(t, cc.WriteFiles[i].Content)
	join := docs["JoinConfiguration"]
	if join == nil || len(docs) != 1 {
		t.Fatalf("%s: want one JoinConfiguration:\n%s", joinConfig, cc.WriteFiles[i].Content)
	}
	if _, ok := join["controlPlane"].(map[string]any); !ok {
		t.Errorf("the JoinConfiguration has no controlPlane section: kubeadm would join a worker:\n%s", cc.WriteFiles[i].Content)
	}
	bt := join["discovery"].(map[string]any)["bootstrapToken"].(map[string]any)
	hash := caHashByHand(t, goldenPKI)
	if bt["apiServerEndpoint"] != cpEndpoint || bt["token"] != goldenToken || !slices.Equal(bt["caCertHashes"].([]any), []any{hash}) {
		t.Errorf("discovery is %v, want %s, the token and [%s]", bt, cpEndpoint, hash)
	}
	if reg := join["nodeRegistration"].(map[string]any); reg["taints"] != nil {
		t.Errorf("taints: %v, want none given (kubeadm's control-plane taint)", reg["taints"])
	}
	if !slices.ContainsFunc(cc.RunCmd, func(c string) bool {
		return strings.HasPrefix(c, joinCommand+" ") && strings.HasSuffix(c, "&& "+sentinel)
	}) {
		t.Errorf("runcmd has no `%s && %s`: %q", joinCommand, sentinel, cc.RunCmd)
	}
}

// caHashByHand is the CA's hash computed here, as kubeadm documents it
// (sha256 of the certificate's DER SubjectPublicKeyInfo), and as the
// fixture file holds it from openssl.
func caHashByHand(t *testing.T, pki string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestCACertHashFromPKI: without --ca-cert-hash, a worker's discovery pins
// the PKI directory's CA, the hash openssl gives for it.
func TestCACertHashFromPKI(t *testing.T) {
	want, err := os.ReadFile(goldenPKIHashes)
	if err != nil {
		t.Fatal(err)
	}
	if got := caHashByHand(t, goldenPKI); got != strings.TrimSpace(string(want)) {
		t.Fatalf("the hash computed here %s is not openssl's %s", got, want)
	}
	out := render(t, []string{"--kubernetes-version", cpVersion, "--api-server-endpoint", cpEndpoint, "--token-file", goldenTokenFile, "--pki-dir", goldenPKI})
	if !strings.Contains(string(out), "\n          - "+strings.TrimSpace(string(want))+"\n") {
		t.Errorf("the worker's JoinConfiguration does not pin %s:\n%s", want, out)
	}
}

// TestInitGeneratesMissingCertificates: into an empty PKI directory, init
// writes the certificates it generated (keys 0600), the same ones its user
// data carries; a second rendering takes them instead of generating anew.
// The admin kubeconfig is signed by that CA, for kubernetes-admin in
// system:masters.
func TestInitGeneratesMissingCertificates(t *testing.T) {
	pki := filepath.Join(t.TempDir(), "pki")
	if err := os.Mkdir(pki, 0o700); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "admin.conf")
	args := append(initArgs(pki), "--admin-kubeconfig", kubeconfig, "--admin-server", "https://127.0.0.1:6443")
	first := render(t, args)
	cc, files := writeFilesOf(t, first)
	checkCertFiles(t, cc, files, pki)
	for _, f := range controlPlaneCertFiles {
		fi, err := os.Stat(filepath.Join(pki, strings.TrimPrefix(f.path, "/etc/kubernetes/pki/")))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f.path, ".key") && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", f.path, fi.Mode().Perm())
		}
	}
	if again := render(t, initArgs(pki)); !bytes.Equal(again, first) {
		t.Errorf("a second rendering with the same PKI directory differs: its certificates were not taken")
	}
	other := filepath.Join(t.TempDir(), "pki")
	if bytes.Equal(render(t, initArgs(other)), first) {
		t.Errorf("two empty PKI directories gave the same certificates")
	}

	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster].Server != "https://127.0.0.1:6443" {
		t.Fatalf("admin kubeconfig: %+v", cfg)
	}
	caPEM, _ := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if !bytes.Equal(cfg.Clusters[ctx.Cluster].CertificateAuthorityData, caPEM) {
		t.Errorf("the admin kubeconfig's CA is not the PKI directory's")
	}
	block, _ := pem.Decode(cfg.AuthInfos[ctx.AuthInfo].ClientCertificateData)
	client, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caBlock, _ := pem.Decode(caPEM)
	ca, _ := x509.ParseCertificate(caBlock.Bytes)
	if err := client.CheckSignatureFrom(ca); err != nil || client.Subject.CommonName != "kubernetes-admin" || !slices.Equal(client.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("admin client certificate %v by the CA: %v", client.Subject, err)
	}
	if fi, err := os.Stat(kubeconfig); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin kubeconfig mode: %v %v, want 0600", fi.Mode().Perm(), err)
	}
}

// TestControlPlaneJoinNeedsEveryCertificate: a control plane joins with
// all of the cluster's certificates, or not at all.
func TestControlPlaneJoinNeedsEveryCertificate(t *testing.T) {
	pki := filepath.Join(t.TempDir(), "pki")
	if err := os.CopyFS(pki, os.DirFS(goldenPKI)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(pki, "etcd")); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(controlPlaneJoinArgs(pki), strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--pki-dir") || stdout.Len() != 0 {
		t.Errorf("without the etcd CA: %v (stdout %d bytes), want an error naming --pki-dir", err, stdout.Len())
	}
	// Half a pair is an error for init too, never replaced by a new one.
	if err := os.Remove(filepath.Join(pki, "ca.key")); err != nil {
		t.Fatal(err)
	}
	err = run(initArgs(pki), strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--pki-dir") {
		t.Errorf("init with ca.crt and no ca.key: %v, want an error naming --pki-dir", err)
	}
}

// Each role asks for its own flags and refuses the others'.
func TestRoleFlagErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		flag string
	}{
		"unknown role":                      {[]string{"--role", "etcd", "--kubernetes-version", cpVersion}, "--role"},
		"init without endpoint":             {[]string{"--role", "init", "--kubernetes-version", cpVersion, "--pki-dir", goldenPKI}, "--control-plane-endpoint"},
		"init without pki":                  {[]string{"--role", "init", "--kubernetes-version", cpVersion, "--control-plane-endpoint", cpEndpoint}, "--pki-dir"},
		"init with a token":                 {append(initArgs(goldenPKI), "--token-file", goldenTokenFile), "--token-file"},
		"init with a join endpoint":         {append(initArgs(goldenPKI), "--api-server-endpoint", cpEndpoint), "--api-server-endpoint"},
		"init endpoint without port":        {[]string{"--role", "init", "--kubernetes-version", cpVersion, "--control-plane-endpoint", "10.0.2.2", "--pki-dir", goldenPKI}, "--control-plane-endpoint"},
		"kubeconfig without server":         {append(initArgs(goldenPKI), "--admin-kubeconfig", "x"), "--admin-server"},
		"control-plane-join without pki":    {[]string{"--role", "control-plane-join", "--kubernetes-version", cpVersion, "--api-server-endpoint", cpEndpoint, "--token-file", goldenTokenFile}, "--pki-dir"},
		"control-plane-join with cert SANs": {append(controlPlaneJoinArgs(goldenPKI), "--api-server-cert-san", "x"), "--api-server-cert-san"},
		"worker with a cluster name":        {append(goldenArgs(), "--cluster-name", "x"), "--cluster-name"},
		"worker pki without a CA":           {[]string{"--kubernetes-version", cpVersion, "--api-server-endpoint", cpEndpoint, "--token-file", goldenTokenFile, "--pki-dir", t.TempDir()}, "--pki-dir"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(c.args, strings.NewReader(""), &stdout, &stderr)
			if err == nil {
				t.Fatalf("run %q succeeded", c.args)
			}
			if !strings.Contains(err.Error(), c.flag) {
				t.Errorf("the error %q does not name %s", err, c.flag)
			}
		})
	}
}
