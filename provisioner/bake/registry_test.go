package bake

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
)

// testCA writes a self-signed CA certificate as PEM.
func testCA(t *testing.T, dir string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mirror CA"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	file := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	return file
}

// The hosts.toml goldens: the registry's upstream as server (Docker Hub's
// API host for docker.io, none for _default), each mirror a host trusted
// to pull and resolve.
func TestHostsTOMLGolden(t *testing.T) {
	for name, c := range map[string]struct {
		m  RegistryMirror
		ca string
	}{
		"one-mirror":      {RegistryMirror{Registry: "registry.k8s.io", Endpoints: []string{"https://mirror.example.com"}}, ""},
		"two-mirrors-ca":  {RegistryMirror{Registry: "docker.io", Endpoints: []string{"https://mirror-a.example.com", "http://10.0.2.2:5000/v2/dockerhub"}, OverridePath: true}, linuxCertsDir + "/docker.io/ca.crt"},
		"skip-verify":     {RegistryMirror{Registry: "registry.example.com:5000", Endpoints: []string{"https://mirror.example.com:8443"}, SkipVerify: true}, ""},
		"default":         {RegistryMirror{Registry: "_default", Endpoints: []string{"https://all.example.com"}}, ""},
		"windows-ca-path": {RegistryMirror{Registry: "ghcr.io", Endpoints: []string{"https://mirror.example.com"}}, windowsCertsDir + `\ghcr.io\ca.crt`},
	} {
		t.Run(name, func(t *testing.T) { golden.Assert(t, "registry/"+name+".toml", []byte(HostsTOML(c.m, c.ca))) })
	}
}

func TestHostsDir(t *testing.T) {
	for in, want := range map[string]string{"docker.io": "docker.io", "_default": "_default", "registry.example.com:5000": "registry.example.com_5000_", "[::1]:5000": "[::1]_5000_", "[::1]": "[::1]"} {
		assert.Equal(t, want, HostsDir(in), in)
	}
}

// Every problem of registry_mirrors is named by its key.
func TestPrepareRegistryMirrors(t *testing.T) {
	dir := t.TempDir()
	ca := testCA(t, dir)
	notPEM := filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(notPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("x")}), 0o600))
	var c Config
	err := c.Prepare(map[string]any{
		"download_cache_dir": t.TempDir(),
		"registry_mirrors": []map[string]any{
			{"registry": "docker.io", "endpoints": []string{"https://mirror.example.com", "http://10.0.2.2:5000"}, "ca_file": ca},
			{"registry": "docker.io", "endpoints": []string{"https://other.example.com"}},
			{"registry": "https://quay.io", "endpoints": []string{"ftp://mirror.example.com", "https://user:pw@mirror.example.com", "https://mirror.example.com/?x=1", "mirror.example.com"}},
			{"registry": "ghcr.io", "endpoints": []string{}, "ca_file": filepath.Join(dir, "missing.pem")},
			{"registry": "_default", "endpoints": []string{"https://a.example.com", "https://a.example.com"}, "ca_file": notPEM},
		},
	})
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, "* registry_mirrors[0]", "the good entry")
	for _, want := range []string{
		`registry_mirrors[1].registry: "docker.io" is configured already by registry_mirrors[0]`,
		`registry_mirrors[2].registry: "https://quay.io" is not a registry host`,
		`registry_mirrors[2].endpoints[0]: "ftp://mirror.example.com": want an https:// or http:// URL`,
		`registry_mirrors[2].endpoints[1]: "https://user:pw@mirror.example.com" holds user information`,
		`registry_mirrors[2].endpoints[2]: "https://mirror.example.com/?x=1" has a query or fragment`,
		`registry_mirrors[2].endpoints[3]: "mirror.example.com": want an https:// or http:// URL`,
		`registry_mirrors[3].endpoints: required`,
		`registry_mirrors[3].ca_file: open ` + filepath.Join(dir, "missing.pem"),
		`registry_mirrors[4].endpoints[1]: "https://a.example.com" is listed twice`,
		`registry_mirrors[4].ca_file: ` + notPEM + ` holds a PRIVATE KEY block`,
	} {
		assert.Contains(t, msg, want)
	}
}

// containerd's config always names the hosts directory and the imports
// directory, for both config versions and both OSes.
func TestContainerdConfigRegistryAndImports(t *testing.T) {
	v2 := ContainerdConfig(2, "registry.k8s.io/pause:3.10", "systemd", "/opt/cni/bin")
	assert.Contains(t, v2, "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n")
	assert.Contains(t, v2, "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n")
	v3 := ContainerdConfig(3, "registry.k8s.io/pause:3.10", "systemd", "/opt/cni/bin")
	assert.Contains(t, v3, "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n")
	assert.Contains(t, v3, "[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = \"/etc/containerd/certs.d\"\n")
	// imports is a top-level key: before the first table.
	for _, cfg := range []string{v2, v3} {
		assert.Less(t, strings.Index(cfg, "imports = "), strings.Index(cfg, "["+"plugins"))
	}
	w := WindowsContainerdConfig(newestContainerd(t, 3), "registry.k8s.io/pause:3.10.2")
	assert.Contains(t, w, `imports = ['C:\Program Files\containerd\conf.d\*.toml']`)
	assert.Contains(t, w, "[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = 'C:\\Program Files\\containerd\\certs.d'\n")
}

// The containerd step's registry part, run against a temporary /etc:
// writes each hosts.toml and CA file once (asking for a restart), then
// changes nothing; a mirror dropped from the configuration loses the
// hosts.toml the bake wrote, a hosts.toml someone else wrote stays.
func TestLinuxRegistryHosts(t *testing.T) {
	dir := t.TempDir()
	caPEM, err := os.ReadFile(testCA(t, dir))
	require.NoError(t, err)
	etc := filepath.Join(dir, "etc")
	hosts := []RegistryHost{
		{Mirror: RegistryMirror{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com"}}, CA: string(caPEM)},
		{Mirror: RegistryMirror{Registry: "registry.example.com:5000", Endpoints: []string{"http://10.0.2.2:5000"}}},
	}
	run := func(hosts []RegistryHost) string {
		s := newSh("test")
		linuxRegistryHosts(s, hosts)
		s.line(`echo "restart=${restart:-0}"`)
		script := strings.ReplaceAll(string(s.bytes()), "/etc/containerd/", etc+"/containerd/")
		require.NotContains(t, script, " /etc/", "every path was redirected")
		out, err := exec.Command("sh", "-c", script).CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	out := run(hosts)
	assert.Contains(t, out, "restart=1")
	toml, err := os.ReadFile(filepath.Join(etc, "containerd/certs.d/docker.io/hosts.toml"))
	require.NoError(t, err)
	assert.Contains(t, string(toml), `server = "https://registry-1.docker.io"`)
	assert.Contains(t, string(toml), `[host."https://mirror.example.com"]`)
	assert.Contains(t, string(toml), `ca = "`+etc+`/containerd/certs.d/docker.io/ca.crt"`)
	ca, err := os.ReadFile(filepath.Join(etc, "containerd/certs.d/docker.io/ca.crt"))
	require.NoError(t, err)
	assert.Equal(t, string(caPEM), string(ca))
	assert.FileExists(t, filepath.Join(etc, "containerd/certs.d/registry.example.com_5000_/hosts.toml"))
	assert.DirExists(t, filepath.Join(etc, "containerd/conf.d"))

	again := run(hosts)
	assert.NotContains(t, again, "changed: ")
	assert.Contains(t, again, "restart=0")

	mine := filepath.Join(etc, "containerd/certs.d/quay.io/hosts.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(mine), 0o755))
	require.NoError(t, os.WriteFile(mine, []byte("server = \"https://quay.io\"\n"), 0o644))
	dropped := run(hosts[1:])
	assert.Contains(t, dropped, "changed: "+etc+"/containerd/certs.d/docker.io/hosts.toml removed (no longer in registry_mirrors)")
	assert.Contains(t, dropped, "restart=1")
	assert.NoDirExists(t, filepath.Join(etc, "containerd/certs.d/docker.io"))
	assert.FileExists(t, mine, "a hosts.toml the bake did not write stays")
	assert.FileExists(t, filepath.Join(etc, "containerd/certs.d/registry.example.com_5000_/hosts.toml"))
}

// The containerd step writes the hosts before it (re)starts containerd.
func TestContainerdStepsWriteHosts(t *testing.T) {
	p := testPlan()
	p.RegistryHosts = []RegistryHost{{Mirror: RegistryMirror{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com"}}}}
	linux := string(linuxContainerd(p))
	assert.Contains(t, linux, "put '/etc/containerd/certs.d/docker.io/hosts.toml' 0644")
	assert.Less(t, strings.Index(linux, "certs.d/docker.io/hosts.toml"), strings.Index(linux, "systemctl restart containerd"))

	w := basePlan(t).withDefaults()
	w.RegistryHosts = p.RegistryHosts
	win := string(windowsContainerd(w))
	assert.Contains(t, win, `Set-KubenodeFile -Path 'C:\Program Files\containerd\certs.d\docker.io\hosts.toml' -Content '# Written by kubenode-bake: the registry host configuration of docker.io`)
	assert.Less(t, strings.Index(win, `certs.d\docker.io\hosts.toml`), strings.Index(win, "Restart-Service -Name 'containerd'"))
}
