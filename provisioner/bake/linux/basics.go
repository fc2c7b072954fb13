// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"slices"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// selfCheck is what the Linux self-check expects of the guest.
func (p Plan) selfCheck() node.SelfCheck {
	return node.SelfCheck{
		KubernetesVersion:    p.KubernetesVersion,
		ContainerdVersion:    p.ContainerdVersion,
		CrictlVersion:        p.CrictlVersion,
		Joiner:               len(p.JoinerConfig) > 0,
		ClusterAPI:           p.clusterAPI(),
		BridgeCNI:            p.CNI == "bridge",
		Images:               append(slices.Clone(p.CheckImages), p.Images.Refs()...),
		CloudInitDatasources: p.CloudInitDatasources,
		KubeadmImages:        p.Images.Kubeadm != "",
	}
}

// Time sync units, in the order the bake prefers an installed one: Debian's
// chrony.service (chronyd.service is its alias there, Fedora's unit), the
// ntpsec and ntp daemons, systemd-timesyncd.
const timeSyncUnits = "chrony.service chronyd.service ntpsec.service ntp.service ntpd.service systemd-timesyncd.service"

// Where the root-growing unit goes on a guest without cloud-init.
const (
	growrootUnit       = "kubenode-growroot.service"
	growrootUnitPath   = "/etc/systemd/system/" + growrootUnit
	growrootScriptPath = "/usr/local/sbin/kubenode-growroot"
)

// nodeBasics installs and enables time sync and makes the root grow to
// the disk of every VM made from the image.
func nodeBasics(p Plan) []byte { return render("node-basics.sh.tmpl", p) }

// GrowrootScript grows the root partition to the end of its disk
// (growpart exits 1 when there is nothing to grow) and then its file
// system. A root that is not a partition (LVM, a whole disk) is left alone.
func GrowrootScript() string { return string(render("growroot.sh.tmpl", nil)) }

const growrootUnitFile = `[Unit]
Description=Grow the root partition and file system to the disk (kubenode)
After=local-fs.target
ConditionPathExists=` + growrootScriptPath + `

[Service]
Type=oneshot
ExecStart=` + growrootScriptPath + `

[Install]
WantedBy=multi-user.target
`

// crictl installs crictl from its release tarball as /usr/bin/crictl
// (the containerd step writes /etc/crictl.yaml) and checks its version.
func crictl(p Plan) []byte { return render("crictl.sh.tmpl", p) }
