package bake

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
)

// Guest locations of containerd's registry host configuration and of the
// configuration files containerd's `imports` reads.
const (
	linuxCertsDir          = "/etc/containerd/certs.d"
	linuxContainerdConfD   = "/etc/containerd/conf.d"
	windowsCertsDir        = windowsContainerdDir + `\certs.d`
	windowsContainerdConfD = windowsContainerdDir + `\conf.d`
	// hostsHeader starts every hosts.toml the bake writes: a later bake
	// removes the ones it wrote that are no longer configured.
	hostsHeader = "# Written by kubenode-bake:"
	caFileName  = "ca.crt"
)

// RegistryHost is a mirror with its CA certificates read from ca_file.
type RegistryHost struct {
	Mirror RegistryMirror
	// CA is ca_file's content; empty: none.
	CA string
}

var registryHostRE = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$|^\[[0-9a-f:.]+\](:[0-9]{1,5})?$`)

// prepareRegistryMirrors checks registry_mirrors, naming the key of every
// problem.
func (c *Config) prepareRegistryMirrors() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	seen := map[string]int{}
	for i, m := range c.RegistryMirrors {
		key := fmt.Sprintf("registry_mirrors[%d]", i)
		switch {
		case m.Registry == "":
			add("%s.registry: required: the registry's host as image references name it (docker.io, registry.k8s.io) or _default", key)
		case m.Registry != "_default" && !registryHostRE.MatchString(m.Registry):
			add("%s.registry: %q is not a registry host (lowercase name or IP address, optional :port, no scheme or path) or _default", key, m.Registry)
		}
		if j, dup := seen[m.Registry]; dup && m.Registry != "" {
			add("%s.registry: %q is configured already by registry_mirrors[%d]; give each registry one entry with all its endpoints", key, m.Registry, j)
		} else {
			seen[m.Registry] = i
		}
		if len(m.Endpoints) == 0 {
			add("%s.endpoints: required: at least one mirror URL (https://mirror.example.com)", key)
		}
		for j, e := range m.Endpoints {
			if err := checkEndpoint(e); err != nil {
				add("%s.endpoints[%d]: %v", key, j, err)
			}
			if slices.Contains(m.Endpoints[:j], e) {
				add("%s.endpoints[%d]: %q is listed twice", key, j, e)
			}
		}
		if m.CAFile != "" {
			if _, err := readCA(m.CAFile); err != nil {
				add("%s.ca_file: %v", key, err)
			}
		}
	}
	return errs
}

// checkEndpoint accepts an absolute http(s) URL with a host, no user
// information, query or fragment.
func checkEndpoint(e string) error {
	u, err := url.Parse(e)
	switch {
	case err != nil || oneLine(e) != "" || strings.ContainsAny(e, " \"'\\`$"):
		return fmt.Errorf("%q is not a URL", e)
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%q: want an https:// or http:// URL", e)
	case u.Host == "":
		return fmt.Errorf("%q has no host", e)
	case u.User != nil:
		return fmt.Errorf("%q holds user information: containerd's hosts.toml takes no credentials (the kubelet passes the Pod's image pull secrets)", e)
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(e, "?"):
		return fmt.Errorf("%q has a query or fragment: give scheme, host, port and path only", e)
	}
	return nil
}

// readCA reads a PEM file of CA certificates: at least one, all parse.
func readCA(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return "", fmt.Errorf("%s holds a %s block: give CA certificates only (PEM, BEGIN CERTIFICATE)", file, block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return "", fmt.Errorf("%s: certificate %d: %w", file, n+1, err)
		}
		n++
	}
	if n == 0 {
		return "", fmt.Errorf("%s holds no PEM certificate (BEGIN CERTIFICATE)", file)
	}
	return string(data), nil
}

// registryHosts reads the mirrors' CA files.
func (c *Config) registryHosts() ([]RegistryHost, error) {
	var out []RegistryHost
	for i, m := range c.RegistryMirrors {
		h := RegistryHost{Mirror: m}
		if m.CAFile != "" {
			ca, err := readCA(m.CAFile)
			if err != nil {
				return nil, fmt.Errorf("registry_mirrors[%d].ca_file: %w", i, err)
			}
			h.CA = ca
		}
		out = append(out, h)
	}
	return out, nil
}

// HostsDir is the directory of a registry's hosts.toml under containerd's
// hosts directory: host:port is written host_port_, a name containerd
// looks for first on every OS (Windows allows no colon in a file name).
func HostsDir(registry string) string {
	if i := strings.LastIndex(registry, ":"); i > 0 && !strings.HasSuffix(registry, "]") {
		return registry[:i] + "_" + registry[i+1:] + "_"
	}
	return registry
}

// upstream is a registry's own server, which containerd falls back to
// after the mirrors: Docker Hub's API is at registry-1.docker.io; _default
// has none (containerd uses the image's registry).
func upstream(registry string) string {
	switch registry {
	case "_default":
		return ""
	case "docker.io":
		return "https://registry-1.docker.io"
	}
	return "https://" + registry
}

// HostsTOML renders a registry's hosts.toml: the registry as its server,
// then each mirror as a host trusted to pull and resolve tags (a private
// mirror, in containerd's table), with the CA file at caPathInGuest ("":
// none), skip_verify and override_path.
func HostsTOML(m RegistryMirror, caPathInGuest string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s the registry host configuration of %s, which containerd reads from its config_path.\n", hostsHeader, m.Registry)
	if s := upstream(m.Registry); s != "" {
		fmt.Fprintf(&b, "server = %s\n", tomlBasic(s))
	}
	for _, e := range m.Endpoints {
		fmt.Fprintf(&b, "\n[host.%s]\n  capabilities = [\"pull\", \"resolve\"]\n", tomlBasic(e))
		if caPathInGuest != "" {
			fmt.Fprintf(&b, "  ca = %s\n", tomlBasic(caPathInGuest))
		}
		if m.SkipVerify {
			b.WriteString("  skip_verify = true\n")
		}
		if m.OverridePath {
			b.WriteString("  override_path = true\n")
		}
	}
	return b.String()
}

// criRegistryConfig is the CRI plugin's registry table for a containerd
// config version: the hosts directory, set even with no mirror so that a
// hosts.toml dropped there later is read.
func criRegistryConfig(version int, configPath string) string {
	if version == 3 {
		return "\n[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = " + configPath + "\n"
	}
	return "\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = " + configPath + "\n"
}

// containerdImports has containerd read the *.toml files of a directory
// after config.toml, as image-builder's config does: site settings go there
// without editing the bake's file.
func containerdImports(pattern string) string { return "imports = [" + pattern + "]\n" }

// linuxRegistryHosts writes the hosts directory (each mirror's hosts.toml
// and CA file), removes the hosts.toml files an earlier bake wrote for
// registries no longer configured, and makes the imports directory. A
// change restarts containerd.
func linuxRegistryHosts(s *sh, hosts []RegistryHost) {
	s.line("mkdir -p %s %s", linuxCertsDir, linuxContainerdConfD)
	var keep []string
	for _, h := range hosts {
		dir := path.Join(linuxCertsDir, HostsDir(h.Mirror.Registry))
		ca := ""
		if h.CA != "" {
			ca = path.Join(dir, caFileName)
			s.file(ca, "0644", h.CA, "restart=1")
		}
		s.file(path.Join(dir, "hosts.toml"), "0644", HostsTOML(h.Mirror, ca), "restart=1")
		keep = append(keep, path.Join(dir, "hosts.toml"))
	}
	s.line("keep=%s", q(" "+strings.Join(keep, " ")+" "))
	s.line(`for f in %s/*/hosts.toml; do`, linuxCertsDir)
	s.line(`  [ -f "$f" ] && head -n 1 "$f" | grep -q %s || continue`, q("^"+hostsHeader))
	s.line(`  case "$keep" in *" $f "*) ;; *) d=$(dirname "$f"); rm -f "$f" "$d/%s"; rmdir "$d" 2>/dev/null || true; echo "changed: $f removed (no longer in registry_mirrors)"; restart=1 ;; esac`, caFileName)
	s.line(`done`)
}

// windowsRegistryHosts is linuxRegistryHosts in PowerShell, for the
// containerd step; it sets $restart when something changed.
func windowsRegistryHosts(s *powershell.Script, hosts []RegistryHost) {
	for _, d := range []string{windowsCertsDir, windowsContainerdConfD} {
		s.Line("New-KubenodeDirectory -Path %s", powershell.Quote(d))
	}
	var keep []string
	for _, h := range hosts {
		dir := windowsCertsDir + `\` + HostsDir(h.Mirror.Registry)
		ca := ""
		if h.CA != "" {
			ca = dir + `\` + caFileName
			s.Line("if (Set-KubenodeFile -Path %s -Content %s) {", powershell.Quote(ca), powershell.Quote(h.CA))
			s.Line("    $restart = $true")
			s.Line("}")
		}
		s.Line("if (Set-KubenodeFile -Path %s -Content %s) {", powershell.Quote(dir+`\hosts.toml`), powershell.Quote(HostsTOML(h.Mirror, ca)))
		s.Line("    $restart = $true")
		s.Line("}")
		keep = append(keep, dir+`\hosts.toml`)
	}
	s.Line("$keep = %s", powershell.Array(keep))
	s.Line("foreach ($file in @(Get-ChildItem -LiteralPath %s -Filter 'hosts.toml' -File -Recurse -Depth 1 -ErrorAction SilentlyContinue)) {", powershell.Quote(windowsCertsDir))
	s.Line("    if ($keep -contains $file.FullName) {")
	s.Line("        continue")
	s.Line("    }")
	s.Line("    if ((Get-Content -LiteralPath $file.FullName -TotalCount 1) -notlike %s) {", powershell.Quote(hostsHeader+"*"))
	s.Line("        continue")
	s.Line("    }")
	s.Line("    Remove-Item -LiteralPath $file.FullName -Force")
	s.Line("    Remove-Item -LiteralPath (Join-Path $file.DirectoryName %s) -Force -ErrorAction SilentlyContinue", powershell.Quote(caFileName))
	s.Line("    if (-not (Get-ChildItem -LiteralPath $file.DirectoryName -Force)) {")
	s.Line("        Remove-Item -LiteralPath $file.DirectoryName -Force")
	s.Line("    }")
	s.Line(`    Write-Host "changed: $($file.FullName) removed (no longer in registry_mirrors)"`)
	s.Line("    $restart = $true")
	s.Line("}")
}
