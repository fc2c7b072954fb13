// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"strings"
)

// Images for Cluster API (bootstrap = "cluster-api"): the kubeadm
// bootstrap provider (CABPK) hands each machine cloud-init user data
// (`## template: jinja`, write_files of the kubeadm join configuration,
// runcmd `kubeadm join`) through NoCloud or a config drive. The image needs
// cloud-init able to run on every clone and to render Jinja, the
// datasources those providers use, and no joiner of its own.

// CloudInitDatasourceNames are the datasources cloud-init knows, as
// datasource_list names them (cloud-init's built-in list, which Debian's
// cloud-init package offers).
var CloudInitDatasourceNames = []string{
	"NoCloud", "ConfigDrive", "OpenNebula", "DigitalOcean", "Azure", "AltCloud", "VMware", "OVF", "MAAS", "GCE",
	"OpenStack", "CloudSigma", "SmartOS", "Bigstep", "Scaleway", "AliYun", "Ec2", "CloudStack", "Hetzner",
	"IBMCloud", "Oracle", "Exoscale", "RbxCloud", "UpCloud", "Vultr", "LXD", "NWCS", "Akamai", "WSL", "CloudCIX",
	"None",
}

// DefaultCloudInitDatasources are those Cluster API's infrastructure
// providers deliver bootstrap data through: NoCloud (Proxmox, a cidata
// disc), ConfigDrive (Metal3/Ironic's config-2, KubeVirt's
// CloudInitConfigDrive, OpenStack's config drive), OpenStack (its metadata
// service), and None last: what cloud-init falls back to when it runs and
// none of the others answers. None does not make cloud-init run: on
// x86_64, ds-identify's default policy disables cloud-init for a boot on
// which it finds none of the listed datasources. cloud-init tries them in
// order and None always succeeds, so it goes last, and a list of None
// alone (which ds-identify takes as-is) never bootstraps a node.
var DefaultCloudInitDatasources = []string{"NoCloud", "ConfigDrive", "OpenStack", "None"}

// Where the datasources go: cloud-init reads /etc/cloud/cloud.cfg, then
// the *.cfg files of cloud.cfg.d in lexical (byte) order, a later
// datasource_list replacing an earlier one. 99-kubenode-... sorts after
// the installers' (90_dpkg.cfg, 90-installer-network.cfg) and a base
// image's own (90-kubenode.cfg); the bake refuses a file that sorts later
// and sets datasource_list.
const (
	cloudCfgDir              = "/etc/cloud/cloud.cfg.d"
	CloudInitDatasourcesFile = cloudCfgDir + "/99-kubenode-datasources.cfg"
)

// cloudInitLeftovers pin or disable cloud-init's datasources or its
// networking on an installed system; image-builder's sysprep role removes
// the same: subiquity's datasource None (99-installer.cfg), its network
// config and the switch that turns cloud-init's networking off (named
// with and without 00-, by subiquity's releases), ds-identify's policy,
// and the file that disables cloud-init altogether.
var cloudInitLeftovers = []string{
	cloudCfgDir + "/99-installer.cfg",
	cloudCfgDir + "/90-installer-network.cfg",
	cloudCfgDir + "/subiquity-disable-cloudinit-networking.cfg",
	cloudCfgDir + "/00-subiquity-disable-cloudinit-networking.cfg",
	"/etc/cloud/ds-identify.cfg",
	"/etc/cloud/cloud-init.disabled",
}

// cloudInitUnits are cloud-init's stage units across its releases
// (24.3 renamed cloud-init.service cloud-init-network.service and added
// cloud-init-main.service); the bake enables those installed.
// cloud-final.service runs runcmd, which holds kubeadm join: every release
// has it, and the self-check requires it.
const (
	cloudInitUnits     = "cloud-init-local.service cloud-init-main.service cloud-init-network.service cloud-init.service cloud-config.service cloud-final.service"
	cloudInitFinalUnit = "cloud-final.service"
)

// containerd's CRI socket: kubeadm's default (unix:///var/run/containerd/containerd.sock;
// /var/run is /run) and what Cluster API's templates name.
const containerdSocket = "/run/containerd/containerd.sock"

// SSH server units; Ubuntu 22.10 and later start sshd from ssh.socket.
const sshUnits = "ssh.service sshd.service ssh.socket sshd.socket"

// CloudInitDatasourcesConfig is the content of
// CloudInitDatasourcesFile.
func CloudInitDatasourcesConfig(datasources []string) string {
	return "# Written by kubenode-bake (bootstrap = \"cluster-api\"): the datasources cloud-init\n" +
		"# looks for Cluster API's bootstrap data in. It sorts last in cloud.cfg.d, so its\n" +
		"# datasource_list replaces those of cloud.cfg and of the other files here.\n" +
		"datasource_list: [ " + strings.Join(datasources, ", ") + " ]\n" +
		"# The VM's name (its datasource's local-hostname) resolves: kubeadm join and sudo\n" +
		"# look it up, and the image's hosts file holds localhost only.\n" +
		"manage_etc_hosts: localhost\n"
}

// clusterAPI readies the guest for Cluster API's kubeadm bootstrap:
// cloud-init and Jinja installed, a joiner an earlier bake left removed,
// the installers' leftovers removed, the datasources written, cloud-init's
// units enabled.
func clusterAPI(p Plan) []byte { return render("cluster-api.sh.tmpl", p) }

// installerNetwork is the network config the OS installer wrote for
// the build VM (subiquity's netplan, and cloud-init's from the installer's
// datasource) and curtin's switch that keeps cloud-init off apt's
// sources: with them a clone would keep the build VM's interfaces and
// addresses; without them cloud-init writes each clone's from its
// datasource. image-builder's sysprep role removes the same.
var installerNetwork = []string{
	"/etc/netplan/00-installer-config.yaml",
	"/etc/netplan/50-cloud-init.yaml",
	cloudCfgDir + "/curtin-preserve-sources.cfg",
}
