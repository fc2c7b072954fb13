package linux

import (
	"path"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Guest locations of containerd's registry host configuration and of the
// configuration files containerd's `imports` reads.
const (
	linuxCertsDir        = "/etc/containerd/certs.d"
	linuxContainerdConfD = "/etc/containerd/conf.d"
)

// linuxRegistryHosts writes the hosts directory (each mirror's hosts.toml
// and CA file), removes the hosts.toml files an earlier bake wrote for
// registries no longer configured, and makes the imports directory. A
// change restarts containerd.
func linuxRegistryHosts(s *sh, hosts []node.RegistryHost) {
	s.line("mkdir -p %s %s", linuxCertsDir, linuxContainerdConfD)
	var keep []string
	for _, h := range hosts {
		dir := path.Join(linuxCertsDir, node.HostsDir(h.Registry))
		ca := ""
		if h.CA != "" {
			ca = path.Join(dir, node.CAFileName)
			s.file(ca, "0644", h.CA, "restart=1")
		}
		s.file(path.Join(dir, "hosts.toml"), "0644", node.HostsTOML(h, ca), "restart=1")
		keep = append(keep, path.Join(dir, "hosts.toml"))
	}
	s.line("keep=%s", q(" "+strings.Join(keep, " ")+" "))
	s.line(`for f in %s/*/hosts.toml; do`, linuxCertsDir)
	s.line(`  [ -f "$f" ] && head -n 1 "$f" | grep -q %s || continue`, q("^"+node.HostsHeader))
	s.line(`  case "$keep" in *" $f "*) ;; *) d=$(dirname "$f"); rm -f "$f" "$d/%s"; rmdir "$d" 2>/dev/null || true; echo "changed: $f removed (no longer in registry_mirrors)"; restart=1 ;; esac`, node.CAFileName)
	s.line(`done`)
}
