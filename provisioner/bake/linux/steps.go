// Package linux turns the description of a node into the steps of a Linux
// guest, POSIX shell scripts (Steps, in order), and runs them over SSH
// (Run).
package linux

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Plan is everything the Linux scripts are rendered from.
type Plan struct {
	KubernetesVersion string
	PauseImage        string
	// ContainerdSource is "tarball" (release tarballs uploaded to Staging)
	// or "package" (the distribution's packages).
	ContainerdSource string
	// ContainerdTarball, RuncBinary and CNITarball are file names in
	// Staging (tarball source only).
	ContainerdTarball, RuncBinary, CNITarball string
	CNI                                       string // none | bridge
	BridgeSubnet                              string
	// CgroupDriver of the kubelet, which containerd's runc runtime must
	// match: kubeadm defaults KubeletConfiguration to systemd.
	CgroupDriver string
	Proxy        node.Proxy
	// JoinerConfig is the joiner's baked configuration (YAML); empty: no joiner.
	JoinerConfig []byte
	Generalize   bool
	// LockAccount is the build account generalize locks on the first boot
	// of every VM made from the image; empty: the account is kept as built.
	LockAccount string
	// HostnamePrefix starts the host name generalize's unit gives a VM
	// from the image that nothing else named (hostname.go); empty:
	// DefaultHostnamePrefix.
	HostnamePrefix string
	// KeepBuildAccount leaves the build account as built: Run sets
	// LockAccount (generalize only) when it is false.
	KeepBuildAccount bool
	// Staging is the guest directory artifacts were uploaded to.
	Staging string
	// SettleTimeout bounds each of the settle step's waits and the dpkg
	// lock wait of every apt-get.
	SettleTimeout time.Duration

	// Node basics and the self-check (basics.go, selfcheck.go).
	// CrictlVersion and CrictlTarball: crictl's release and its tarball in
	// Staging; empty: crictl is not installed.
	CrictlVersion, CrictlTarball string
	// ContainerdVersion is the containerd release asked for (tarball
	// source), which the self-check compares; empty: not compared.
	ContainerdVersion string
	// CheckImages are image references the self-check expects in
	// containerd's k8s.io namespace (the images preloaded into the image).
	CheckImages []string
	// Images are preloaded into containerd; RegistryHosts written to its
	// hosts directory.
	Images        node.Images
	RegistryHosts []node.RegistryHost

	// Bootstrap is how a node from the image joins (node.BootstrapJoiner,
	// the default when empty, or node.BootstrapClusterAPI; clusterapi.go).
	Bootstrap string
	// CloudInitDatasources is the datasource_list written for
	// node.BootstrapClusterAPI.
	CloudInitDatasources []string
}

// clusterAPI says the image is for Cluster API's kubeadm bootstrap.
func (p Plan) clusterAPI() bool { return p.Bootstrap == node.BootstrapClusterAPI }

// proxyEnv are the proxy's variables, in both spellings.
func proxyEnv(p node.Proxy) []string {
	var out []string
	for _, kv := range [][2]string{{"HTTP_PROXY", p.HTTP}, {"HTTPS_PROXY", p.HTTPS}, {"NO_PROXY", p.No}} {
		if kv[1] != "" {
			out = append(out, kv[0]+"="+kv[1], strings.ToLower(kv[0])+"="+kv[1])
		}
	}
	return out
}

// Guest paths on Linux.
const (
	linuxBinDir      = "/usr/bin"
	linuxCNIBinDir   = "/opt/cni/bin"
	linuxCNIConfDir  = "/etc/cni/net.d"
	linuxJoinerConf  = "/etc/kubenode/joiner.yaml"
	linuxKubeletConf = "/etc/kubernetes/kubelet.conf"
)

// Steps renders the Linux bake, in order. Settle comes first: Run runs it
// before the artifacts are uploaded.
func Steps(p Plan) []node.Step {
	steps := []node.Step{
		{Name: stepSettle, Script: linuxSettle(p)},
		{Name: "prerequisites", Script: linuxPrerequisites(p)},
		{Name: node.StepNodeBasics, Script: linuxNodeBasics(p)},
		{Name: "kernel", Script: linuxKernel()},
		{Name: "containerd", Script: linuxContainerd(p)},
		{Name: "cni", Script: linuxCNI(p)},
		{Name: "kubernetes", Script: linuxKubernetes(p)},
	}
	if p.CrictlTarball != "" {
		steps = append(steps, node.Step{Name: node.StepCrictl, Script: linuxCrictl(p)})
	}
	if step, ok := linuxImagesStep(p); ok {
		steps = append(steps, step)
	}
	if p.clusterAPI() {
		steps = append(steps, node.Step{Name: node.StepClusterAPI, Script: linuxClusterAPI(p)})
	}
	if len(p.JoinerConfig) > 0 {
		steps = append(steps, node.Step{Name: "joiner", Script: linuxJoiner(p)})
	}
	steps = append(steps, node.Step{Name: node.StepSelfCheck, Script: SelfCheck(p.selfCheck())})
	if p.Generalize {
		steps = append(steps, node.Step{Name: "generalize", Script: linuxGeneralize(p)})
	}
	return append(steps, node.Step{Name: "cleanup", Script: linuxCleanup(p)})
}

// sh builds a POSIX shell script. Values go in only through q.
type sh struct{ b strings.Builder }

func newSh(title string) *sh {
	s := &sh{}
	s.line("#!/bin/sh")
	s.line("# kubenode-bake: %s. Generated from typed configuration; do not edit.", title)
	s.line("set -eu")
	s.line("export DEBIAN_FRONTEND=noninteractive LC_ALL=C")
	// put writes a file only when its content differs, and says which.
	s.line(`put() { # put PATH MODE: stdin -> PATH when it or its mode differs`)
	s.line(`  tmp=$(mktemp); cat > "$tmp"`)
	s.line(`  if [ -f "$1" ] && cmp -s "$tmp" "$1" && [ "$(stat -c %%a "$1")" = "${2#0}" ]; then rm -f "$tmp"; echo "ok: $1"; return 1; fi`)
	s.line(`  mkdir -p "$(dirname "$1")"; install -m "$2" "$tmp" "$1"; rm -f "$tmp"; echo "changed: $1"`)
	s.line(`}`)
	return s
}

func (s *sh) line(format string, args ...any) {
	fmt.Fprintf(&s.b, format, args...)
	s.b.WriteByte('\n')
}

// file writes content to path with mode through put; then runs onChange
// (a shell command) if the file changed.
func (s *sh) file(path, mode, content, onChange string) {
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	delim := "KUBENODE_EOF"
	for strings.Contains(content, delim) {
		delim += "_"
	}
	// put "fails" when nothing changed: test it, never let set -e see it.
	cmd := "put " + q(path) + " " + mode + " <<'" + delim + "'"
	if onChange != "" {
		s.line("if %s", cmd)
	} else {
		s.line("%s || true", cmd)
	}
	s.b.WriteString(content)
	s.line("%s", delim)
	if onChange != "" {
		s.line("then %s; fi", onChange)
	}
}

func (s *sh) bytes() []byte { return []byte(s.b.String()) }

// q quotes a value for the shell.
func q(v string) string { return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'" }

func linuxPrerequisites(p Plan) []byte {
	s := newSh("prerequisites from the distribution's package manager")
	for _, kv := range proxyEnv(p.Proxy) {
		s.line("export %s", q(kv))
	}
	pkgs := []string{"conntrack", "socat", "iptables", "ethtool", "ebtables", "ca-certificates", "kmod", "procps", "tar"}
	if p.ContainerdSource == "package" {
		pkgs = append(pkgs, "containerd", "runc", "containernetworking-plugins")
	}
	s.line("need=''")
	s.line("if command -v apt-get >/dev/null; then")
	s.line("  for p in %s; do dpkg-query -W -f='${Status}' \"$p\" 2>/dev/null | grep -q 'ok installed' || need=\"$need $p\"; done", strings.Join(pkgs, " "))
	s.line("  if [ -n \"$need\" ]; then echo \"changed: installing$need\"; %[1]s update -qq; %[1]s install -y -qq --no-install-recommends $need >/dev/null; else echo 'ok: packages present'; fi", aptGet(p.SettleTimeout))
	s.line("elif command -v dnf >/dev/null; then")
	dnf := strings.ReplaceAll(strings.Join(pkgs, " "), "conntrack", "conntrack-tools")
	dnf = strings.ReplaceAll(dnf, "containernetworking-plugins", "containernetworking-plugins")
	s.line("  for p in %s; do rpm -q \"$p\" >/dev/null 2>&1 || need=\"$need $p\"; done", dnf)
	s.line("  if [ -n \"$need\" ]; then echo \"changed: installing$need\"; dnf install -y -q $need; else echo 'ok: packages present'; fi")
	s.line("else")
	s.line("  echo 'no apt-get or dnf on this guest: kubenode-bake supports Debian/Ubuntu and Fedora/RHEL families' >&2; exit 1")
	s.line("fi")
	return s.bytes()
}

func linuxKernel() []byte {
	s := newSh("kernel modules, sysctls and swap for the kubelet")
	s.file("/etc/modules-load.d/kubenode.conf", "0644", "overlay\nbr_netfilter\n", "")
	s.line("for m in overlay br_netfilter; do")
	s.line(`  if grep -q "^$m " /proc/modules; then echo "ok: module $m"; else modprobe "$m"; echo "changed: module $m loaded"; fi`)
	s.line("done")
	s.file("/etc/sysctl.d/99-kubenode.conf", "0644",
		"net.bridge.bridge-nf-call-iptables = 1\nnet.bridge.bridge-nf-call-ip6tables = 1\nnet.ipv4.ip_forward = 1\n",
		"sysctl -q -p /etc/sysctl.d/99-kubenode.conf")
	s.line("if [ \"$(sysctl -n net.ipv4.ip_forward)\" != 1 ]; then sysctl -q -p /etc/sysctl.d/99-kubenode.conf; echo 'changed: sysctls applied'; fi")
	// swap: off now and at boot (the kubelet refuses to start with swap).
	s.line("if [ \"$(wc -l < /proc/swaps)\" -gt 1 ]; then swapoff -a; echo 'changed: swap off'; else echo 'ok: no swap'; fi")
	s.line(`if grep -Eq '^[^#].*[[:space:]]swap[[:space:]]' /etc/fstab; then sed -i -E 's|^([^#].*[[:space:]]swap[[:space:]].*)$|# kubenode: \1|' /etc/fstab; echo 'changed: swap removed from /etc/fstab'; fi`)
	s.line("for u in $(systemctl list-units --type swap --plain --no-legend 2>/dev/null | awk '{print $1}'); do systemctl mask \"$u\"; echo \"changed: masked $u\"; done")
	return s.bytes()
}

// ContainerdConfig renders /etc/containerd/config.toml for a containerd
// config version (2 for 1.x, 3 for 2.x): the pause image, the runc cgroup
// driver matching the kubelet's, and the CNI directories.
func ContainerdConfig(version int, pause, cgroupDriver, cniBin string) string {
	systemd := cgroupDriver == "systemd"
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by kubenode-bake.\nversion = %d\n", version)
	fmt.Fprintf(&b, "%s\n", node.ContainerdImports(fmt.Sprintf("%q", linuxContainerdConfD+"/*.toml")))
	switch version {
	case 3:
		fmt.Fprintf(&b, "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = %q\n\n", pause)
		fmt.Fprintf(&b, "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n\n")
		fmt.Fprintf(&b, "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n  SystemdCgroup = %t\n\n", systemd)
		fmt.Fprintf(&b, "[plugins.'io.containerd.cri.v1.runtime'.cni]\n  bin_dirs = [%q]\n  conf_dir = %q\n", cniBin, linuxCNIConfDir)
		b.WriteString(node.CRIRegistryConfig(3, fmt.Sprintf("%q", linuxCertsDir)))
	default:
		fmt.Fprintf(&b, "[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = %q\n\n", pause)
		fmt.Fprintf(&b, "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n\n")
		fmt.Fprintf(&b, "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n  SystemdCgroup = %t\n\n", systemd)
		fmt.Fprintf(&b, "[plugins.\"io.containerd.grpc.v1.cri\".cni]\n  bin_dir = %q\n  conf_dir = %q\n", cniBin, linuxCNIConfDir)
		b.WriteString(node.CRIRegistryConfig(2, fmt.Sprintf("%q", linuxCertsDir)))
	}
	return b.String()
}

const containerdUnit = `[Unit]
Description=containerd container runtime
Documentation=https://containerd.io
After=network.target local-fs.target

[Service]
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/containerd
Type=notify
Delegate=yes
KillMode=process
Restart=always
RestartSec=5
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
OOMScoreAdjust=-999

[Install]
WantedBy=multi-user.target
`

func linuxContainerd(p Plan) []byte {
	s := newSh("containerd, runc and crictl's config")
	if p.ContainerdSource == "tarball" {
		tarball := path.Join(p.Staging, p.ContainerdTarball)
		s.line("if [ -x /usr/local/bin/containerd ] && tar -xzf %s -O bin/containerd | cmp -s - /usr/local/bin/containerd; then echo 'ok: containerd binaries'; else tar -C /usr/local -xzf %s; echo 'changed: containerd extracted to /usr/local'; fi", q(tarball), q(tarball))
		s.line("if cmp -s %s /usr/local/sbin/runc 2>/dev/null; then echo 'ok: runc'; else install -m 0755 %s /usr/local/sbin/runc; echo 'changed: runc installed'; fi",
			q(path.Join(p.Staging, p.RuncBinary)), q(path.Join(p.Staging, p.RuncBinary)))
		s.file("/etc/systemd/system/containerd.service", "0644", containerdUnit, "systemctl daemon-reload")
	}
	cniBin := linuxCNIBinDir
	s.line("major=$(containerd --version | sed -E 's/.* v?([0-9]+)\\..*/\\1/')")
	s.line("if [ \"$major\" -ge 2 ]; then")
	s.file("/etc/containerd/config.toml", "0644", ContainerdConfig(3, p.PauseImage, p.CgroupDriver, cniBin), "restart=1")
	s.line("else")
	s.file("/etc/containerd/config.toml", "0644", ContainerdConfig(2, p.PauseImage, p.CgroupDriver, cniBin), "restart=1")
	s.line("fi")
	linuxRegistryHosts(s, p.RegistryHosts)
	if dropIn := ProxyDropIn(p.Proxy); dropIn != "" {
		// A proxy URL may hold a password: root only.
		s.file("/etc/systemd/system/containerd.service.d/http-proxy.conf", "0600", dropIn, "systemctl daemon-reload; restart=1")
	} else {
		s.line("if [ -f /etc/systemd/system/containerd.service.d/http-proxy.conf ]; then rm -f /etc/systemd/system/containerd.service.d/http-proxy.conf; systemctl daemon-reload; restart=1; echo 'changed: proxy drop-in removed'; fi")
	}
	s.file("/etc/crictl.yaml", "0644", "runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\ntimeout: 10\n", "")
	s.line("if ! systemctl is-enabled -q containerd; then systemctl enable -q containerd; echo 'changed: containerd enabled'; else echo 'ok: containerd enabled'; fi")
	s.line("if [ \"${restart:-0}\" = 1 ] || ! systemctl is-active -q containerd; then systemctl restart containerd; echo 'changed: containerd restarted'; fi")
	return s.bytes()
}

// ProxyDropIn is containerd's systemd drop-in with the proxy settings, ""
// when there are none.
func ProxyDropIn(p node.Proxy) string {
	env := proxyEnv(p)
	if len(env) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("[Service]\n")
	for _, kv := range env {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote(kv))
	}
	return b.String()
}

// systemdQuote quotes a value for a unit file's Environment=: systemd
// unescapes C escapes inside double quotes and then expands %-specifiers,
// so a percent-encoded password (%40) needs its % doubled.
func systemdQuote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '%':
			b.WriteString("%%")
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// BridgeConflist is the node-local bridge network of `cni = "bridge"`.
func BridgeConflist(subnet string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "kubenode-bridge",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
`, subnet)
}

func linuxCNI(p Plan) []byte {
	s := newSh("CNI plugins in /opt/cni/bin and the network config")
	s.line("mkdir -p %s %s", linuxCNIBinDir, linuxCNIConfDir)
	switch p.ContainerdSource {
	case "tarball":
		tarball := path.Join(p.Staging, p.CNITarball)
		s.line("if [ -x %s/bridge ] && tar -xzf %s -O ./bridge | cmp -s - %s/bridge; then echo 'ok: CNI plugins'; else tar -C %s -xzf %s; echo 'changed: CNI plugins extracted'; fi",
			linuxCNIBinDir, q(tarball), linuxCNIBinDir, linuxCNIBinDir, q(tarball))
	default:
		// Debian's containernetworking-plugins live in /usr/lib/cni (Fedora:
		// /usr/libexec/cni); link them where the kubelet's world expects them.
		s.line("src=''; for d in /usr/lib/cni /usr/libexec/cni; do if [ -d \"$d\" ]; then src=$d; fi; done")
		s.line("[ -n \"$src\" ] || { echo 'the CNI plugins package installed no /usr/lib/cni or /usr/libexec/cni' >&2; exit 1; }")
		s.line("for f in \"$src\"/*; do t=%s/$(basename \"$f\"); if [ \"$(readlink \"$t\" || true)\" = \"$f\" ]; then :; else ln -sf \"$f\" \"$t\"; echo \"changed: $t\"; fi; done", linuxCNIBinDir)
		s.line("echo \"ok: CNI plugins from $src linked into %s\"", linuxCNIBinDir)
	}
	if p.CNI == "bridge" {
		s.file(linuxCNIConfDir+"/10-kubenode-bridge.conflist", "0644", BridgeConflist(p.BridgeSubnet), "")
	} else {
		s.line("echo 'ok: no CNI config (cni = none: the cluster'\"'\"'s CNI brings it)'")
	}
	return s.bytes()
}

const kubeletUnit = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target containerd.service

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`

// kubeadmDropIn is kubeadm's kubelet drop-in: the flags kubeadm join writes
// to kubeadm-flags.env reach the kubelet through it.
const kubeadmDropIn = `[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`

func linuxKubernetes(p Plan) []byte {
	s := newSh("kubelet, kubeadm and kubectl " + p.KubernetesVersion)
	for _, b := range []string{"kubelet", "kubeadm", "kubectl"} {
		src := q(path.Join(p.Staging, b))
		s.line("if cmp -s %s %s/%s 2>/dev/null; then echo 'ok: %s'; else install -m 0755 %s %s/%s; echo 'changed: %s installed'; fi", src, linuxBinDir, b, b, src, linuxBinDir, b, b)
	}
	checkKubeVersions(s, linuxBinDir, p.KubernetesVersion)
	s.line("mkdir -p /etc/kubernetes/manifests /var/lib/kubelet")
	s.file("/etc/systemd/system/kubelet.service", "0644", kubeletUnit, "reload=1")
	s.file("/etc/systemd/system/kubelet.service.d/10-kubeadm.conf", "0644", kubeadmDropIn, "reload=1")
	s.line("if [ \"${reload:-0}\" = 1 ]; then systemctl daemon-reload; fi")
	// Enabled, not started: it has no configuration until kubeadm join.
	s.line("if systemctl is-enabled -q kubelet; then echo 'ok: kubelet enabled'; else systemctl enable -q kubelet; echo 'changed: kubelet enabled'; fi")
	return s.bytes()
}

// checkKubeVersions fails the script, naming both versions, unless the
// kubelet and kubeadm in binDir are the release asked for: local artifacts
// may be of any version, and kubernetes_version decides the pause image
// and the kubelet flags the bake writes. `kubelet --version` prints
// "Kubernetes vX.Y.Z", `kubeadm version -o short` "vX.Y.Z".
func checkKubeVersions(s *sh, binDir, want string) {
	for _, c := range []struct{ name, args string }{{"kubelet", "--version"}, {"kubeadm", "version -o short"}} {
		bin := path.Join(binDir, c.name)
		s.line("v=$(%s %s 2>/dev/null | awk 'NR == 1 { print $NF }') || v=", q(bin), c.args)
		s.line(`if [ "$v" != %s ]; then`, q(want))
		s.line(`  echo %s"${v:-no version}"%s >&2`, q("kubernetes_version is "+want+" but the "+c.name+" at "+bin+" reports "),
			q(": give the "+c.name+" of "+want+" (artifacts."+c.name+" or artifacts_dir), or set kubernetes_version to the version of the binaries you give"))
		s.line("  exit 1")
		s.line("fi")
	}
	s.line("echo %s", q("ok: kubelet and kubeadm are "+want))
}

func linuxJoiner(p Plan) []byte {
	s := newSh("the joiner and its first-boot unit")
	src := q(path.Join(p.Staging, "kubenode-joiner"))
	s.line("if cmp -s %s %s 2>/dev/null; then echo 'ok: joiner'; else install -m 0755 %s %s; echo 'changed: joiner installed'; fi", src, units.LinuxJoinerPath, src, units.LinuxJoinerPath)
	s.file(linuxJoinerConf, "0600", string(p.JoinerConfig), "")
	s.file(units.LinuxUnitPath, "0644", units.SystemdUnit(linuxKubeletConf), "systemctl daemon-reload")
	s.line("if systemctl is-enabled -q %s; then echo 'ok: %s enabled'; else systemctl enable -q %s; echo 'changed: %s enabled'; fi",
		units.JoinerServiceName, units.JoinerServiceName, units.JoinerServiceName, units.JoinerServiceName)
	return s.bytes()
}

// linuxCleanup removes the staging directory, whatever generalize says: it
// holds the artifacts and the scripts, which the image must not keep. The
// script runs from there; sh has it open, so removing it is safe.
func linuxCleanup(p Plan) []byte {
	s := newSh("cleanup: the staging directory removed")
	linuxRestartTimers(s, p.Staging)
	s.line("rm -rf %s", q(p.Staging))
	// This bake made it: removing it changes nothing in the image.
	s.line("echo %s", q("ok: removed "+p.Staging))
	return s.bytes()
}

func linuxGeneralize(p Plan) []byte {
	s := newSh("generalize: every VM from this image is a new machine")
	s.line("if [ -s /etc/machine-id ]; then truncate -s 0 /etc/machine-id; echo 'changed: machine-id emptied (systemd makes a new one at boot)'; else echo 'ok: machine-id empty'; fi")
	s.line("rm -f /var/lib/dbus/machine-id")
	s.line("if ls /etc/ssh/ssh_host_*key* >/dev/null 2>&1; then rm -f /etc/ssh/ssh_host_*key*; echo 'changed: SSH host keys removed'; else echo 'ok: no SSH host keys'; fi")
	// Without cloud-init nothing recreates host keys: a unit does it.
	s.file("/etc/systemd/system/kubenode-ssh-hostkeys.service", "0644", `[Unit]
Description=Generate SSH host keys missing from a generalized image
Before=ssh.service sshd.service
ConditionPathExistsGlob=!/etc/ssh/ssh_host_*_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=multi-user.target
`, "systemctl daemon-reload; systemctl enable -q kubenode-ssh-hostkeys.service")
	linuxLockAccount(s, p.LockAccount)
	linuxRemoveInstallerProxy(s)
	if p.clusterAPI() {
		linuxRemoveCloneHostname(s)
		linuxResetNetwork(s)
		linuxCleanCloudInit(s)
	} else {
		prefix := p.HostnamePrefix
		if prefix == "" {
			prefix = DefaultHostnamePrefix
		}
		linuxCloneHostname(s, prefix)
		s.line("if command -v cloud-init >/dev/null && [ -e /var/lib/cloud/instance ]; then cloud-init clean --logs >/dev/null; echo 'changed: cloud-init state cleaned'; fi")
	}
	s.line("if command -v apt-get >/dev/null; then apt-get clean; fi")
	s.line("find /var/log -type f \\( -name '*.gz' -o -name '*.[0-9]' \\) -delete")
	s.line("find /var/log -type f -exec truncate -s 0 {} +")
	s.line("echo 'ok: logs truncated'")
	return s.bytes()
}

// The apt configuration the OS installers write from the builder's
// `linux { http_proxy }`: curtin's (autoinstall's proxy) and cloud-init's
// (apt: proxy) drop-ins, and the Acquire::http::Proxy line d-i's apt-setup
// adds to apt.conf for mirror/http/proxy. All are mode 0644.
const (
	linuxAptConf            = "/etc/apt/apt.conf"
	linuxCurtinAptProxy     = "/etc/apt/apt.conf.d/90curtin-aptproxy"
	linuxCloudInitAptProxy  = "/etc/apt/apt.conf.d/90cloud-init-aptproxy"
	linuxAptProxyLineRegexp = `^[[:space:]]*Acquire::https?::Proxy([[:space:]"]|::)`
)

// linuxRemoveInstallerProxy removes the installer's proxy from the image:
// it is meant for the OS install only (the bake's own http_proxy lives in
// containerd's drop-in), and the URL may hold credentials that every clone
// would otherwise keep in world-readable files. Only the proxy lines of
// apt.conf go, whatever else it holds stays; an apt.conf left empty goes.
func linuxRemoveInstallerProxy(s *sh) {
	for _, f := range []string{linuxCurtinAptProxy, linuxCloudInitAptProxy} {
		s.line("if [ -e %s ]; then rm -f %s; echo %s; fi", f, f, q("changed: "+f+" removed (the installer's proxy)"))
	}
	s.line("if [ -f %s ] && grep -Eqi '%s' %s; then", linuxAptConf, linuxAptProxyLineRegexp, linuxAptConf)
	s.line("  sed -E -i '/%s/Id' %s", linuxAptProxyLineRegexp, linuxAptConf)
	s.line("  echo %s", q("changed: Acquire::http(s)::Proxy removed from "+linuxAptConf+" (the installer's proxy)"))
	s.line("  if ! grep -q '[^[:space:]]' %s; then rm -f %s; echo %s; fi", linuxAptConf, linuxAptConf, q("changed: "+linuxAptConf+" removed (empty)"))
	s.line("fi")
}

// Where generalize leaves the build account's lock.
const (
	linuxLockUnit   = "kubenode-lock-build-account.service"
	linuxLockScript = "/usr/local/sbin/kubenode-lock-build-account"
)

// linuxLockAccount has the build account locked on the first boot of every
// VM made from the image, not now: the rest of the build (a later
// provisioner, the builder's `sudo shutdown`) still runs as that account.
// With no account to lock it removes what an earlier bake left.
func linuxLockAccount(s *sh, account string) {
	unitPath := "/etc/systemd/system/" + linuxLockUnit
	if account == "" {
		s.line("if [ -e %s ] || [ -e %s ]; then systemctl disable -q %s 2>/dev/null || true; rm -f %s %s; systemctl daemon-reload; echo 'changed: the build account is kept (keep_build_account)'; else echo 'ok: the build account is kept (keep_build_account)'; fi",
			unitPath, linuxLockScript, linuxLockUnit, unitPath, linuxLockScript)
		return
	}
	s.file(linuxLockScript, "0700", LockScript(account), "")
	s.file(unitPath, "0644", linuxLockUnitFile, "systemctl daemon-reload")
	s.line("if systemctl is-enabled -q %s; then echo 'ok: %s enabled'; else systemctl enable -q %s; echo 'changed: %s enabled: %s is locked on the first boot of every VM from this image'; fi",
		linuxLockUnit, linuxLockUnit, linuxLockUnit, linuxLockUnit, account)
}

// linuxLockUnitFile runs the lock before anyone can log in and before a
// VM's own cloud-init seed runs (its users module may give the same name
// new keys and sudo rights, which the lock must not take away again).
const linuxLockUnitFile = `[Unit]
Description=Lock the account kubenode built this image with
DefaultDependencies=no
After=local-fs.target
Before=sysinit.target cloud-init-local.service cloud-init.service ssh.service sshd.service systemd-user-sessions.service getty.target
Conflicts=shutdown.target
ConditionPathExists=` + linuxLockScript + `

[Service]
Type=oneshot
ExecStart=` + linuxLockScript + `

[Install]
WantedBy=sysinit.target
`

// LockScript locks account so that neither the build password nor the
// build's SSH keys open it: password locked (usermod -L), authorized_keys
// removed, sudo rights the seed gave it removed (kubenode's sudoers
// drop-in, cloud-init's rule, the sudo, wheel and admin groups), and SSH
// password authentication a seed turned on turned off again. The account
// itself, its UID and files stay; root can unlock it (usermod -U). Every
// command is tried; the unit then disables itself.
func LockScript(account string) string {
	s := &sh{}
	s.line("#!/bin/sh")
	s.line("# kubenode-bake: lock the build account on this VM's first boot. Generated; do not edit.")
	s.line("set -u")
	s.line("user=%s", q(account))
	s.line(`usermod -L "$user" && echo "kubenode: $user: password locked"`)
	s.line(`home=$(getent passwd "$user" | cut -d: -f6)`)
	s.line(`if [ -n "$home" ]; then rm -f "$home/.ssh/authorized_keys" "$home/.ssh/authorized_keys2"; echo "kubenode: $user: authorized_keys removed"; fi`)
	s.line(`rm -f "/etc/sudoers.d/90-kubenode-$user"`)
	s.line(`if [ -f /etc/sudoers.d/90-cloud-init-users ]; then sed -i "/^$user[[:space:]]/d" /etc/sudoers.d/90-cloud-init-users; fi`)
	s.line(`for g in sudo wheel admin; do case " $(id -nG "$user" 2>/dev/null) " in *" $g "*) gpasswd -d "$user" "$g" >/dev/null;; esac; done`)
	s.line(`echo "kubenode: $user: sudo rights removed"`)
	s.line(`for f in /etc/ssh/sshd_config /etc/ssh/sshd_config.d/*.conf; do if [ -f "$f" ]; then sed -i -E 's/^[[:space:]]*PasswordAuthentication[[:space:]]+yes[[:space:]]*$/PasswordAuthentication no/' "$f"; fi; done`)
	s.line(`echo "kubenode: SSH password authentication off where it was turned on"`)
	s.line("systemctl disable -q %s", linuxLockUnit)
	return s.b.String()
}
