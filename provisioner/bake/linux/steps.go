// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package linux turns the description of a node into the steps of a Linux
// guest, POSIX shell scripts rendered from the template files in scripts/
// (Steps, in order), and runs them over SSH (Bake).
package linux

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Plan is everything the Linux scripts are rendered from.
type Plan struct {
	KubernetesVersion string
	// Kubernetes is its row of the version table: with ContainerdSource
	// "package", the containerd the distribution installed is held to the
	// row's containerd support matrix once the prerequisites step has run.
	Kubernetes versions.KubernetesRelease
	PauseImage string
	// ContainerdSource is "tarball" (release tarballs uploaded to Staging)
	// or "package" (the distribution's packages).
	ContainerdSource string
	// PackageContainerd is the containerd release (X.Y or X.Y.Z) the
	// distribution's package is declared to be built from (package
	// source); the guest's must be of its minor. Empty: not declared.
	PackageContainerd string
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
	// KeepBuildAccount leaves the build account as built: run sets
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
	binDir      = "/usr/bin"
	cniBinDir   = "/opt/cni/bin"
	cniConfDir  = "/etc/cni/net.d"
	joinerConf  = "/etc/kubenode/joiner.yaml"
	kubeletConf = "/etc/kubernetes/kubelet.conf"
)

// Steps renders the Linux bake, in order. Settle comes first: run runs it
// before the artifacts are uploaded.
func Steps(p Plan) []node.Step {
	steps := []node.Step{
		{Name: stepSettle, Script: settle(p)},
		{Name: stepPrerequisites, Script: prerequisites(p)},
		{Name: node.StepNodeBasics, Script: nodeBasics(p)},
		{Name: "kernel", Script: kernel()},
		{Name: "containerd", Script: containerd(p)},
		{Name: "cni", Script: cni(p)},
		{Name: "kubernetes", Script: kubernetes(p)},
	}
	if p.CrictlTarball != "" {
		steps = append(steps, node.Step{Name: node.StepCrictl, Script: crictl(p)})
	}
	if step, ok := imagesStep(p); ok {
		steps = append(steps, step)
	}
	if p.clusterAPI() {
		steps = append(steps, node.Step{Name: node.StepClusterAPI, Script: clusterAPI(p)})
	}
	if len(p.JoinerConfig) > 0 {
		steps = append(steps, node.Step{Name: "joiner", Script: joiner(p)})
	}
	steps = append(steps, node.Step{Name: node.StepSelfCheck, Script: SelfCheck(p.selfCheck())})
	if p.Generalize {
		steps = append(steps, node.Step{Name: "generalize", Script: generalize(p)})
	}
	return append(steps, node.Step{Name: "cleanup", Script: cleanup(p)})
}

// stepPrerequisites installs the distribution's packages the node needs
// (with ContainerdSource "package", containerd among them).
const stepPrerequisites = "prerequisites"

// Each step's script is its template, scripts/STEP.sh.tmpl, rendered
// from the plan or from a small input of its own (the other steps' are
// in the files of their features).

func prerequisites(p Plan) []byte { return render("prerequisites.sh.tmpl", p) }

func kernel() []byte { return render("kernel.sh.tmpl", nil) }

func containerd(p Plan) []byte { return render("containerd.sh.tmpl", p) }

func cni(p Plan) []byte { return render("cni.sh.tmpl", p) }

func kubernetes(p Plan) []byte { return render("kubernetes.sh.tmpl", p) }

// kubeVersionCheck is the input of check-kube-versions (kubernetes.sh.tmpl):
// the kubelet and kubeadm in BinDir must be the release Want.
type kubeVersionCheck struct{ BinDir, Want string }

func joiner(p Plan) []byte { return render("joiner.sh.tmpl", p) }

// generalizeInput is the input of generalize.sh.tmpl.
type generalizeInput struct {
	// LockAccount is the build account to lock; empty: it is kept.
	LockAccount string
	// ClusterAPI: cloud-init names each VM and configures its network;
	// otherwise the clone-naming unit names it, with HostnamePrefix.
	ClusterAPI     bool
	HostnamePrefix string
}

func generalize(p Plan) []byte {
	prefix := p.HostnamePrefix
	if prefix == "" {
		prefix = DefaultHostnamePrefix
	}
	return render("generalize.sh.tmpl", generalizeInput{LockAccount: p.LockAccount, ClusterAPI: p.clusterAPI(), HostnamePrefix: prefix})
}

// cleanup removes the staging directory, whatever generalize says.
func cleanup(p Plan) []byte { return render("cleanup.sh.tmpl", p) }

// ContainerdConfig renders /etc/containerd/config.toml for a containerd
// config version (2 for 1.x, 3 for 2.x): the pause image, the runc cgroup
// driver matching the kubelet's, and the CNI directories.
func ContainerdConfig(version int, pause, cgroupDriver, cniBin string) string {
	systemd := cgroupDriver == "systemd"
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by kubenode-bake.\nversion = %d\n", version)
	fmt.Fprintf(&b, "%s\n", node.ContainerdImports(fmt.Sprintf("%q", containerdConfD+"/*.toml")))
	switch version {
	case 3:
		fmt.Fprintf(&b, "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = %q\n\n", pause)
		fmt.Fprintf(&b, "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n\n")
		fmt.Fprintf(&b, "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n  SystemdCgroup = %t\n\n", systemd)
		fmt.Fprintf(&b, "[plugins.'io.containerd.cri.v1.runtime'.cni]\n  bin_dirs = [%q]\n  conf_dir = %q\n", cniBin, cniConfDir)
		b.WriteString(node.CRIRegistryConfig(3, fmt.Sprintf("%q", certsDir)))
	default:
		fmt.Fprintf(&b, "[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = %q\n\n", pause)
		fmt.Fprintf(&b, "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n\n")
		fmt.Fprintf(&b, "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n  SystemdCgroup = %t\n\n", systemd)
		fmt.Fprintf(&b, "[plugins.\"io.containerd.grpc.v1.cri\".cni]\n  bin_dir = %q\n  conf_dir = %q\n", cniBin, cniConfDir)
		b.WriteString(node.CRIRegistryConfig(2, fmt.Sprintf("%q", certsDir)))
	}
	return b.String()
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

// The apt configuration the OS installers write from the builder's
// `linux { http_proxy }`, which generalize removes: curtin's
// (autoinstall's proxy) and cloud-init's (apt: proxy) drop-ins, and the
// Acquire::http::Proxy line d-i's apt-setup adds to apt.conf for
// mirror/http/proxy. All are mode 0644.
const (
	aptConf            = "/etc/apt/apt.conf"
	curtinAptProxy     = "/etc/apt/apt.conf.d/90curtin-aptproxy"
	cloudInitAptProxy  = "/etc/apt/apt.conf.d/90cloud-init-aptproxy"
	aptProxyLineRegexp = `^[[:space:]]*Acquire::https?::Proxy([[:space:]"]|::)`
)

// Where generalize leaves the build account's lock.
const (
	lockUnit       = "kubenode-lock-build-account.service"
	lockUnitPath   = "/etc/systemd/system/" + lockUnit
	lockScriptPath = "/usr/local/sbin/kubenode-lock-build-account"
)

// lockUnitFile runs the lock before anyone can log in and before a VM's
// own cloud-init seed runs (its users module may give the same name new
// keys and sudo rights, which the lock must not take away again).
const lockUnitFile = `[Unit]
Description=Lock the account kubenode built this image with
DefaultDependencies=no
After=local-fs.target
Before=sysinit.target cloud-init-local.service cloud-init.service ssh.service sshd.service systemd-user-sessions.service getty.target
Conflicts=shutdown.target
ConditionPathExists=` + lockScriptPath + `

[Service]
Type=oneshot
ExecStart=` + lockScriptPath + `

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
	return string(render("lock-build-account.sh.tmpl", account))
}
