// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:generate go tool packer-sdc mapstructure-to-hcl2 -type Config,ImageArchive,RegistryMirror
//go:generate bash ../../scripts/struct-markdown.sh

// Package bake is the kubenode-bake provisioner: it installs containerd,
// the kubelet, kubeadm and kubectl, CNI plugins and the joiner (with its
// first-boot service) into the machine a builder made, over whatever
// communicator Packer hands it (SSH or WinRM). This package is the Packer
// part of the flow: the HCL configuration and its checks, the description
// of the node built from it (provisioner/bake/node, with the version
// table's releases and the artifacts provisioner/bake/fetch finds or
// downloads and checks on this machine), the choice of the guest's OS
// package (provisioner/bake/linux or provisioner/bake/windows), which runs
// the steps, and the record of what was baked for kubenode-export
// (internal/baked).
package bake

import (
	"fmt"
	"log"
	"maps"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/common"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/template/config"
	"github.com/hashicorp/packer-plugin-sdk/template/interpolate"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/deliver"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/linux"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Config is the configuration of the kubenode-bake provisioner.
type Config struct {
	common.PackerConfig `mapstructure:",squash"`

	// The guest's OS: `linux` or `windows`. Default: asked of the guest
	// (`uname -s` answers on Linux).
	GuestOS string `mapstructure:"guest_os_type"`
	// Kubernetes release of the kubelet, kubeadm and kubectl, `vX.Y.Z`: any
	// patch release of a minor in the version table (v1.30 to v1.37; see
	// docs/bake.md); pre-releases are refused. The bake checks on the guest
	// that the kubelet and kubeadm it installs report this version. Default
	// `v1.37.2`.
	KubernetesVersion string `mapstructure:"kubernetes_version"`
	// containerd release, `X.Y.Z` without a `v`: any patch release of a
	// minor in the version table (1.7, 2.0, 2.1, 2.2, 2.3, 2.4). Default `2.3.7`.
	// With `containerd_source = "package"` (Linux) it is instead the
	// upstream release the distribution's containerd package is built
	// from, a minor `X.Y` or a release `X.Y.Z` (Ubuntu 24.04: `2.2`;
	// Debian 12: `1.6.20`, older than the matrix lists for any minor):
	// `packer validate` refuses it when containerd's Kubernetes support
	// matrix does not list it for `kubernetes_version`, and the bake fails
	// when the guest's package is of another minor. Unset with the
	// package path, `packer validate` refuses unless every distribution
	// the version table knows packages a containerd the matrix lists.
	ContainerdVersion string `mapstructure:"containerd_version"`
	// Where containerd, runc and the CNI plugins come from on Linux:
	// `tarball` (the release tarballs, from the official URLs or
	// `artifacts_dir`) or `package` (the distribution's packages:
	// containerd, runc, containernetworking-plugins; set
	// `containerd_version` to the release its containerd is built from).
	// Default `tarball`.
	ContainerdSource string `mapstructure:"containerd_source"`
	// containernetworking/plugins release, `vX.Y.Z`: any v1 release.
	// Default `v1.10.0`.
	CNIPluginsVersion string `mapstructure:"cni_plugins_version"`
	// The sandbox (pause) image containerd and the kubelet use. Default:
	// kubeadm's for `kubernetes_version`, raised to the Windows build's
	// minimum on Windows.
	PauseImage string `mapstructure:"pause_image"`
	// crictl (cri-tools) release, `vX.Y.Z`: any patch release of a
	// cri-tools minor in the version table. Default: the table's release
	// for `kubernetes_version`'s minor (cri-tools makes one minor per
	// Kubernetes minor).
	CrictlVersion string `mapstructure:"crictl_version"`
	// Accept a `kubernetes_version`, `containerd_version`,
	// `crictl_version` or `cni_plugins_version` release whose minor (major
	// for the CNI plugins) is not in the version table. The bake then takes
	// the facts of the nearest minor in the table (the newest one older than
	// it; for a minor older than every row, the oldest row) and warns,
	// naming the version asked for and the minor whose facts it uses.
	// Pre-releases are refused still. Default false: such a release is
	// refused.
	AllowUnlistedVersion bool `mapstructure:"allow_unlisted_version"`
	// Install crictl: `/usr/bin/crictl` on Linux, `crictl.exe` beside
	// containerd (with its `crictl.yaml`) on Windows, from the official
	// release or `artifacts`/`artifacts_dir` like the other artifacts.
	// Default true. With false, the self-check asks containerd with `ctr`.
	InstallCrictl *bool `mapstructure:"install_crictl"`

	// Image archives imported into containerd's `k8s.io` namespace at bake
	// time, for nodes that reach no registry (repeatable `images { path =
	// "...", sha256 = "..." }` blocks). Each image is labelled pinned, so
	// the kubelet's image garbage collection keeps it (containerd 1.7.3 and
	// later honour the label).
	Images []ImageArchive `mapstructure:"images"`
	// Image references pulled in the guest at bake time (through
	// `registry_mirrors`), pinned like `images`; the guest must reach the
	// registry or a mirror.
	PullImages []string `mapstructure:"pull_images"`
	// Pull kubeadm's images for `kubernetes_version` in the guest
	// (`kubeadm config images pull`): the control plane's, CoreDNS and the
	// pause image. Linux only. Default false. The same as `kubeadm_images
	// = "pull"`.
	PullKubeadmImages bool `mapstructure:"pull_kubeadm_images"`
	// Preload every image `kubeadm config images list --kubernetes-version
	// <kubernetes_version>` names in the guest (kube-apiserver,
	// kube-controller-manager, kube-scheduler, kube-proxy, etcd, CoreDNS,
	// pause): what `kubeadm init` and `kubeadm join --control-plane` run,
	// for an image that serves control-plane Machines. `pull`: those the
	// `images` archives do not hold are pulled (through `registry_mirrors`).
	// `archives`: they come from the `images` archives alone, for builds
	// that reach no registry; the bake fails, naming each image, when an
	// archive is missing. Either way they are pinned like `images`, the
	// self-check verifies the whole list, and the manifest records it
	// (`baked.kubeadm_images`). Linux only. Default: none (`pull` with
	// `pull_kubeadm_images`).
	KubeadmImages string `mapstructure:"kubeadm_images"`
	// containerd registry host configuration: repeatable
	// `registry_mirrors { registry = "docker.io", endpoints = [...] }`
	// blocks, one per registry, each written as the registry's hosts.toml
	// under containerd's `config_path` (`/etc/containerd/certs.d`, Windows
	// `C:\Program Files\containerd\certs.d`), which the bake always sets.
	RegistryMirrors []RegistryMirror `mapstructure:"registry_mirrors"`

	// A local directory holding the artifacts to upload instead of
	// downloading them (air-gapped builds): `kubelet`, `kubeadm`, `kubectl`
	// (`.exe` on Windows, plus `kube-log-runner.exe`), the containerd,
	// CNI plugins and crictl release tarballs under their release file
	// names, and the joiner (`kubenode-joiner` / `kubenode-joiner.exe`).
	ArtifactsDir string `mapstructure:"artifacts_dir"`
	// Explicit local files by artifact name (`kubelet`, `kubeadm`, `kubectl`,
	// `kube-log-runner`, `containerd`, `runc`, `cni-plugins`, `joiner`,
	// `crictl`); these
	// win over `artifacts_dir`.
	Artifacts map[string]string `mapstructure:"artifacts"`
	// Expected sha256 (hex) of artifacts by name. Downloads are checked
	// against the published checksum files; a value here is checked too.
	ArtifactChecksums map[string]string `mapstructure:"artifact_checksums"`
	// How the artifacts reach the guest: `http`, where the guest downloads
	// them from a server of the bake's own on this machine that listens only
	// while they are fetched and serves them under a random path;
	// `communicator`, uploaded over SSH or WinRM (WinRM sends a few KB per
	// command: minutes per hundred MB). Either way the guest checks each
	// file's sha256 before anything is installed. Default: `http` when the
	// guest's address of this machine is known (the builder's
	// `{{ .HTTPIP }}`, as kubenode-libvirt sets it, or
	// `artifact_http_ip`), else `communicator`.
	ArtifactDelivery string `mapstructure:"artifact_delivery"`
	// The address at which the guest reaches this machine, for `http`
	// delivery. Default: the builder's `{{ .HTTPIP }}`.
	ArtifactHTTPIP string `mapstructure:"artifact_http_ip"`
	// The address the artifact server listens on. Default: 127.0.0.1 when
	// the guest reaches this machine as QEMU user networking's 10.0.2.2,
	// else `artifact_http_ip`.
	ArtifactHTTPBindAddress string `mapstructure:"artifact_http_bind_address"`
	// The artifact server's TCP port. Default 0: any free port.
	ArtifactHTTPPort int `mapstructure:"artifact_http_port"`
	// Mirrors of the official download sites, for builds whose host reaches
	// no internet (air-gapped) or should not: a map of URL prefix to the
	// prefix that replaces it, e.g. `{ "https://dl.k8s.io" =
	// "http://mirror.example:8080/dl.k8s.io", "https://github.com" =
	// "http://mirror.example:8080/github.com" }`. Every download the bake
	// makes on the build host (the Kubernetes binaries from dl.k8s.io; the
	// containerd, runc, CNI plugins and crictl releases and the
	// cloudbase-init MSI from github.com) and its published checksum file
	// are fetched from the rewritten URL; the longest matching prefix wins,
	// matched on whole path segments, and a trailing `/` makes no
	// difference. The mirror serves the upstream layout, checksum files
	// included: downloads are verified against the mirror's checksum files
	// (and `artifact_checksums`). A plain `http://` mirror's checksum files
	// prove nothing (whoever is on the way to it can serve any file with a
	// matching checksum), so every artifact downloaded through one needs
	// its sha256 in `artifact_checksums`, unless
	// `trust_http_mirror_checksums` is set; `packer validate` names both
	// keys otherwise (with `guest_os_type` unset it checks a Linux guest's
	// downloads; a Windows guest's are checked before they are
	// downloaded). Keys and values are absolute http(s) URLs. Files found
	// through `artifacts` or `artifacts_dir` are not downloaded at all.
	// Default: none.
	DownloadMirrors map[string]string `mapstructure:"download_mirrors"`
	// Take the checksum files of a plain `http://` mirror in
	// `download_mirrors` on trust, instead of `artifact_checksums`: only for
	// a mirror on a path nobody else is on, such as one on this machine's
	// 127.0.0.1 serving files built here (the lab's). They then catch a
	// damaged download, not a changed one. Default false.
	TrustHTTPMirrorChecksums bool `mapstructure:"trust_http_mirror_checksums"`
	// Directory downloads are cached in. Default: Packer's cache
	// (`PACKER_CACHE_DIR`, else `packer_cache`).
	DownloadCacheDir string `mapstructure:"download_cache_dir"`

	// Proxy URL for http:// requests: downloads on the build host, the
	// package manager of a Linux guest, and containerd's service
	// environment (image pulls). With neither `http_proxy` nor
	// `https_proxy` set, downloads on the build host follow its
	// HTTP_PROXY, HTTPS_PROXY and NO_PROXY.
	HTTPProxy string `mapstructure:"http_proxy"`
	// Proxy URL for https:// requests, used in the same places as
	// `http_proxy`.
	HTTPSProxy string `mapstructure:"https_proxy"`
	// Comma-separated hosts, domains and CIDRs reached without the proxy,
	// in the same places.
	NoProxy string `mapstructure:"no_proxy"`

	// `none` (default: the cluster's CNI DaemonSet brings the network) or
	// `bridge` (a static node-local bridge config, for labs with one node
	// per pod subnet; refused with `bootstrap = "cluster-api"`).
	CNI string `mapstructure:"cni"`
	// Pod subnet of the `bridge` CNI config: an IPv4 network address, /30 or
	// wider. Default `10.85.0.0/16`.
	BridgeSubnet string `mapstructure:"bridge_subnet"`
	// Windows: add Microsoft Defender exclusions for containerd, the kubelet
	// and their data, where Defender exists. Default true.
	DefenderExclusions *bool `mapstructure:"defender_exclusions"`
	// Windows: install Hyper-V with the Containers feature: `auto` (only
	// when the guest supports virtualization), `on` or `off`. Default `auto`.
	HyperV string `mapstructure:"hyperv"`
	// Windows: features to install beside Containers, in the same step and
	// with the same restart, by the names `Get-WindowsFeature` lists, e.g.
	// `["RemoteAccess", "RSAT-RemoteAccess-PowerShell", "Routing"]`, which
	// Calico needs for BGP and which a HostProcess DaemonSet cannot add
	// (they need a restart). Each name once; not `Containers` (always
	// installed) nor Hyper-V's (`hyperv`). A name this Windows does not have
	// fails the bake, naming it. Refused for a Linux guest. Default: none.
	WindowsFeatures []string `mapstructure:"windows_features"`
	// Windows: the NTP servers the Windows Time service syncs with, host
	// names or IP addresses, e.g. `["ntp.example.com", "192.0.2.123"]`. The
	// bake sets them as its manual peer list (`w32tm /config
	// /manualpeerlist:... /syncfromflags:manual`), and each clone's first
	// boot sets them again should sysprep have reset them; with `bootstrap =
	// "cluster-api"`, cloudbase-init then no longer takes the servers DHCP
	// offers. Refused for a Linux guest (configure chrony or
	// systemd-timesyncd with a shell provisioner). Default: none, Windows'
	// own sources (`time.windows.com` outside a domain; with `bootstrap =
	// "cluster-api"`, the servers DHCP offers).
	NTPServers []string `mapstructure:"ntp_servers"`
	// How long to wait for Windows to come back after the Containers
	// feature's reboot. Default 15m.
	RestartTimeout time.Duration `mapstructure:"restart_timeout"`
	// Windows: install the software updates Windows Update offers
	// (cumulative and servicing stack updates, .NET Framework, Defender
	// definitions; not drivers, not optional features, not hidden updates)
	// as the bake's first step, restarting whenever they ask, in rounds
	// until a round finds nothing left to install (at most 5 rounds). The
	// guest needs to reach Windows Update (or its WSUS server). Default
	// false: a lab's throwaway image builds in minutes instead of hours; a
	// golden image should set it true. Refused for `guest_os_type = "linux"`
	// and for a guest found to run Linux (update its packages with a shell
	// provisioner).
	WindowsUpdate bool `mapstructure:"windows_update"`
	// Windows, with `windows_update`: the hard limit for the whole update
	// phase (every round's search, download and install, and the restarts
	// between rounds); the build fails when it runs out. At least 1m.
	// Default 2h.
	WindowsUpdateTimeout time.Duration `mapstructure:"windows_update_timeout"`
	// Windows: keep automatic updates on the nodes made from the image.
	// Default false: the bake's first step sets the policy
	// `HKLM:\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU`
	// `NoAutoUpdate = 1`, as image-builder's systemprep role does first, so
	// that neither the bake nor a node is restarted by Windows Update on its
	// own (update nodes by replacing them with a newer image, or through
	// your own WSUS or policy). `true` leaves the policy as Windows and
	// the image have it. `windows_update` installs updates during the bake
	// either way. Refused for `guest_os_type = "linux"`.
	WindowsAutomaticUpdates bool `mapstructure:"windows_automatic_updates"`

	// Linux: how long the bake's first step waits for the guest to settle,
	// for each of: cloud-init to finish its first boot (`cloud-init status
	// --wait`; one that ends in error is reported and the bake goes on), and
	// the dpkg lock that another apt-get holds (also the lock wait of every
	// apt-get the bake runs). apt's daily timers are stopped for the bake's
	// duration and started again at its end. Default 10m.
	SettleTimeout time.Duration `mapstructure:"settle_timeout"`

	// Install the joiner and its first-boot service. Default true.
	InstallJoiner *bool `mapstructure:"install_joiner"`
	// Labels the joiner registers the node with. Labels a kubelet may not
	// set on its own Node are refused (the `kubernetes.io` and `k8s.io`
	// namespaces, e.g. `node-role.kubernetes.io/*`, except the well-known
	// ones).
	NodeLabels map[string]string `mapstructure:"node_labels"`
	// Extra kubelet flags (name without dashes -> value) the joiner passes.
	// A value may not hold whitespace, quotes or backslashes (write Windows
	// paths with `/`), which would split it into more flags; `node-labels`
	// and `register-with-taints` are refused (use `node_labels`).
	KubeletExtraArgs map[string]string `mapstructure:"kubelet_extra_args"`
	// Windows: the kubelet's process priority class
	// (`--windows-priorityclass`): `IDLE_PRIORITY_CLASS`,
	// `BELOW_NORMAL_PRIORITY_CLASS`, `NORMAL_PRIORITY_CLASS`,
	// `ABOVE_NORMAL_PRIORITY_CLASS`, `HIGH_PRIORITY_CLASS` or
	// `REALTIME_PRIORITY_CLASS`. Above normal, busy Pods cannot starve the
	// kubelet of CPU, as Kubernetes' "Resource Management for Windows nodes"
	// advises. It is in the kubelet service's command line and the joiner's
	// configuration, so it stays after the join; with `bootstrap =
	// "cluster-api"` the KubeadmConfigTemplate's kubeletExtraArgs override
	// it. Refused for a Linux guest. Default `ABOVE_NORMAL_PRIORITY_CLASS`.
	KubeletPriorityClass string `mapstructure:"kubelet_priority_class"`
	// Windows: what the kubelet keeps from Pods for Windows itself
	// (`--system-reserved`), by resource (`cpu`, `memory`,
	// `ephemeral-storage`, `pid`), each a quantity (`500m`, `2Gi`; `pid` a
	// number). Windows pages instead of ending processes when memory runs
	// out, so Pods must not be scheduled onto the memory Windows needs:
	// Kubernetes advises at least 2 GiB. Carried like
	// `kubelet_priority_class`. Refused for a Linux guest (use
	// `kubelet_extra_args` there). Default `{ memory = "2Gi" }`; `{}`
	// reserves nothing.
	KubeletSystemReserved map[string]string `mapstructure:"kubelet_system_reserved"`
	// Windows: what the kubelet keeps from Pods for the kubelet and
	// containerd (`--kube-reserved`), in the form of
	// `kubelet_system_reserved`. Refused for a Linux guest. Default: none.
	KubeletKubeReserved map[string]string `mapstructure:"kubelet_kube_reserved"`
	// Make every VM from the image a new machine. Default true. Linux:
	// remove machine-id, SSH host keys, cloud-init state and logs at the
	// end. Windows: close the build's WinRM/SSH access, autologon and UAC
	// changes, then run sysprep (`/generalize /oobe /quit /mode:vm`) with a
	// first-boot answer file as the build's last act; once it succeeds WinRM
	// is closed and the guest powered off, so the builder needs no
	// `shutdown_command`.
	Generalize *bool `mapstructure:"generalize"`
	// Linux, with `generalize`: keep the build account (the communicator's
	// user) usable in every VM made from the image, with its password, SSH
	// keys and passwordless sudo. Default false: on each VM's first boot,
	// before sshd and before the VM's own cloud-init seed run, the account's
	// password is locked, its `authorized_keys` and sudo rights (kubenode's
	// sudoers drop-in, cloud-init's rule, the sudo, wheel and admin groups)
	// are removed, and SSH password authentication a seed turned on is
	// turned off; the account itself stays (see docs/security.md). Refused
	// for `guest_os_type = "windows"` and for a guest found to run Windows.
	KeepBuildAccount bool `mapstructure:"keep_build_account"`
	// Linux, with `generalize` and `bootstrap = "joiner"`: how the host name
	// of a VM made from the image starts when nothing else names it. Each
	// boot, after cloud-init's stages and before the joiner and the kubelet,
	// `kubenode-hostname.service` renames a VM still called by the build's
	// host name (or `localhost`, or nothing) to this prefix followed by the
	// first 12 hex digits of its machine ID (generalize empties
	// `/etc/machine-id`, so each VM has its own), e.g.
	// `kubenode-3f2a9c01be47`, and adds it to `/etc/hosts` (`127.0.1.1`). A
	// name a cloud-init seed (NoCloud `local-hostname`, a config drive) or
	// the user gave is left alone. The joiner's node name defaults to the
	// host name, so each such node gets its own. Lowercase letters, digits
	// and `-`, starting with a letter or digit, at most 51 characters (the
	// name is a DNS label of at most 63). Default `kubenode-`. Refused for
	// Windows guests, with `generalize = false` and with `bootstrap =
	// "cluster-api"` (the datasource names every VM).
	HostnamePrefix string `mapstructure:"hostname_prefix"`
	// Windows, with `generalize`: the Administrator password of every VM
	// made from the image (mark the variable `sensitive`). Empty: each VM's
	// first boot gives Administrator a random password of its own, made on
	// that VM and stored nowhere, so nobody can log on to it with a
	// password; reach such a VM through the cluster (a HostProcess pod runs
	// as SYSTEM and can set a password) or set this key (see
	// docs/security.md).
	CloneAdminPassword string `mapstructure:"clone_admin_password"`

	// Cluster API's bootstrap; the checks are in config_bootstrap.go.

	// How nodes made from the image join their cluster: `joiner` (the
	// joiner and its first-boot service, from the seed disc) or
	// `cluster-api` (Linux: cloud-init runs the user data of Cluster API's
	// kubeadm bootstrap provider, which holds `kubeadm join`; the image
	// gets cloud-init with Jinja and `cloud_init_datasources` and no
	// joiner. Windows: cloudbase-init, from the version table's MSI or
	// `artifacts.cloudbase-init`, configured with
	// `cloudbase_init_metadata_services` and started by the clone's
	// SetupComplete.cmd once Setup has finished; the kubelet's service
	// runs `C:\k\StartKubelet.ps1`, which adds the flags kubeadm writes to
	// `C:\var\lib\kubelet\kubeadm-flags.env`; `C:\run\cluster-api` is
	// made for Cluster API's bootstrap-success.complete. On both,
	// `install_joiner = true`, `artifacts.joiner`,
	// `artifact_checksums.joiner`, `node_labels` and `kubelet_extra_args`
	// are refused: the KubeadmConfigTemplate carries labels and kubelet
	// flags). Default `joiner`.
	Bootstrap string `mapstructure:"bootstrap"`
	// With `bootstrap = "cluster-api"`: cloud-init's `datasource_list`,
	// written to `/etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg`,
	// names cloud-init knows (`NoCloud`, `ConfigDrive`, `OpenStack`,
	// `Ec2`, `None`, ...), each once, at least one other than `None`, and
	// `None` only last (cloud-init tries them in order and `None` always
	// succeeds, with no bootstrap data). Default `["NoCloud", "ConfigDrive",
	// "OpenStack", "None"]`: a cidata disc (Proxmox and other NoCloud
	// providers), a config-2 drive (Metal3/Ironic, KubeVirt, OpenStack),
	// OpenStack's metadata service.
	CloudInitDatasources []string `mapstructure:"cloud_init_datasources"`
	// With `bootstrap = "cluster-api"` on Windows (Linux guests use
	// `cloud_init_datasources`, which Windows refuses): cloudbase-init's
	// `metadata_services`, tried in order, by their class paths
	// (`cloudbaseinit.metadata.services.configdrive.ConfigDriveService`,
	// `cloudbaseinit.metadata.services.nocloudservice.NoCloudConfigDriveService`,
	// `...httpservice.HttpService`, `...ec2service.EC2Service`,
	// `...maasservice.MaaSHttpService`, `...azureservice.AzureService`,
	// `...ovfservice.OvfService`,
	// `...vmwareguestinfoservice.VMwareGuestInfoService`), each once.
	// Default: ConfigDriveService, then NoCloudConfigDriveService (a
	// config-2 drive or a cidata seed).
	CloudbaseInitMetadataServices []string `mapstructure:"cloudbase_init_metadata_services"`

	ctx interpolate.Context
	// rel are the version table's rows of the configured versions
	// (releases).
	rel *releases
	// warnings found by Prepare, printed when the bake starts: a
	// provisioner's Prepare has no way to return them.
	warnings []string
	// configSHA256 is the configuration's digest (confighash.Sum), for
	// the image's provenance.
	configSHA256 string
	// cloudInitDatasourcesSet: the configuration set cloud_init_datasources
	// (Prepare fills the default in when guest_os_type is unset; a
	// Windows guest refuses only what the user set).
	cloudInitDatasourcesSet bool
}

// Prepare decodes and validates the configuration; every problem is
// reported, each naming its key.
func (c *Config) Prepare(raws ...interface{}) error {
	err := config.Decode(c, &config.DecodeOpts{
		PluginType:         "kubenode-bake",
		Interpolate:        true,
		InterpolateContext: &c.ctx,
	}, raws...)
	if err != nil {
		return err
	}
	var errs *packersdk.MultiError
	add := func(format string, args ...any) { errs = packersdk.MultiErrorAppend(errs, fmt.Errorf(format, args...)) }

	if c.GuestOS != "" && c.GuestOS != "linux" && c.GuestOS != "windows" {
		add("guest_os_type: %q is not linux or windows", c.GuestOS)
	}
	for _, err := range c.prepareBootstrap() {
		errs = packersdk.MultiErrorAppend(errs, err)
	}
	if c.ContainerdSource == "" {
		c.ContainerdSource = "tarball"
	}
	if c.ContainerdSource != "tarball" && c.ContainerdSource != "package" {
		add("containerd_source: %q is not tarball or package", c.ContainerdSource)
	}
	if c.CNI == "" {
		c.CNI = "none"
	}
	if c.CNI != "none" && c.CNI != "bridge" {
		add("cni: %q is not none or bridge", c.CNI)
	}
	if c.BridgeSubnet == "" {
		c.BridgeSubnet = "10.85.0.0/16"
	}
	if err := checkBridgeSubnet(c.BridgeSubnet); err != nil {
		add("bridge_subnet: %v", err)
	}
	if c.HyperV == "" {
		c.HyperV = "auto"
	}
	if !slices.Contains([]string{"auto", "on", "off"}, c.HyperV) {
		add("hyperv: %q is not auto, on or off", c.HyperV)
	}
	if c.RestartTimeout == 0 {
		c.RestartTimeout = 15 * time.Minute
	}
	if c.WindowsUpdateTimeout == 0 {
		c.WindowsUpdateTimeout = 2 * time.Hour
	}
	if c.SettleTimeout == 0 {
		c.SettleTimeout = 10 * time.Minute
	}
	if c.SettleTimeout < 10*time.Second {
		add("settle_timeout: %s is too short to wait for cloud-init or another apt-get; give at least 10s (default 10m)", c.SettleTimeout)
	}
	if c.WindowsUpdateTimeout < time.Minute {
		add("windows_update_timeout: %s is less than a minute; give the whole update phase at least 1m (default 2h)", c.WindowsUpdateTimeout)
	}
	if c.HostnamePrefix != "" {
		switch {
		case c.Generalize != nil && !*c.Generalize:
			add(`hostname_prefix: only used with generalize (which gives each VM a machine ID of its own, the name's suffix); remove it, or remove generalize = false`)
		case c.Bootstrap == node.BootstrapClusterAPI:
			add(`hostname_prefix: bootstrap = "cluster-api" images take each VM's name from its datasource (Cluster API's machine name); remove hostname_prefix`)
		}
		if why := linux.CheckHostnamePrefix(c.HostnamePrefix); why != "" {
			add("hostname_prefix: %s", why)
		}
	}
	for _, err := range c.guestRefusals(c.GuestOS) {
		errs = packersdk.MultiErrorAppend(errs, err)
	}
	c.DefenderExclusions = orTrue(c.DefenderExclusions)
	c.InstallJoiner = orTrue(c.InstallJoiner)
	c.Generalize = orTrue(c.Generalize)

	if !slices.Contains([]string{"", deliver.HTTP, deliver.Communicator}, c.ArtifactDelivery) {
		add("artifact_delivery: %q is not http or communicator", c.ArtifactDelivery)
	}
	if c.ArtifactHTTPIP != "" && net.ParseIP(c.ArtifactHTTPIP) == nil {
		add("artifact_http_ip: %q is not an IP address", c.ArtifactHTTPIP)
	}
	if c.ArtifactHTTPBindAddress != "" && net.ParseIP(c.ArtifactHTTPBindAddress) == nil {
		add("artifact_http_bind_address: %q is not an IP address", c.ArtifactHTTPBindAddress)
	}
	if c.ArtifactHTTPPort < 0 || c.ArtifactHTTPPort > 65535 {
		add("artifact_http_port: %d is not a TCP port (0 for any free port)", c.ArtifactHTTPPort)
	}
	if c.ArtifactDelivery == deliver.Communicator && (c.ArtifactHTTPIP != "" || c.ArtifactHTTPBindAddress != "" || c.ArtifactHTTPPort != 0) {
		add(`artifact_delivery: "communicator" uploads the artifacts, so artifact_http_ip, artifact_http_bind_address and artifact_http_port have nothing to do; remove them or use "http"`)
	}
	// Versions come from the table; an unknown one, or releases that do
	// not work together, fail here rather than after the guest has booted.
	for _, err := range slices.Concat(c.validateVersions(), c.validateNode(), c.prepareBasics(), c.prepareImages(), c.prepareRegistryMirrors(), c.prepareDownloads()) {
		errs = packersdk.MultiErrorAppend(errs, err)
	}
	c.warnings = slices.Concat(c.versionWarnings(), c.registryMirrorWarnings(), c.fetchOptions().MirrorWarnings())
	for _, w := range c.warnings {
		log.Printf("kubenode-bake: warning: %s", w)
	}
	if errs != nil && len(errs.Errors) > 0 {
		return errs
	}
	return nil
}

func orTrue(b *bool) *bool {
	if b == nil {
		t := true
		return &t
	}
	return b
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// checkBridgeSubnet accepts what the bridge config can use: an IPv4 network
// (its only route is 0.0.0.0/0) written as its network address, with room
// for the gateway and at least one pod.
func checkBridgeSubnet(s string) error {
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a CIDR such as 10.85.0.0/16", s)
	case !p.Addr().Is4():
		return fmt.Errorf("%q is not IPv4: the bridge config routes 0.0.0.0/0 only", s)
	case p.Masked() != p:
		return fmt.Errorf("%q is not a network address: write %s", s, p.Masked())
	case p.Bits() > 30:
		return fmt.Errorf("%q leaves no address for a pod beside the gateway: use /30 or wider (/24 is typical)", s)
	}
	return nil
}
