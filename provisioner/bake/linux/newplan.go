// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"maps"
	"slices"

	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	joinerconfig "github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// JoinerFileName is the joiner's artifact in Staging.
const JoinerFileName = "kubenode-joiner"

// Artifacts are the files a Linux guest gets for img, in order: the
// Kubernetes binaries, containerd, runc and the CNI plugins (tarball
// source), crictl, the joiner. The images' archives are added later.
func Artifacts(img node.Image) []versions.Artifact {
	arts := img.Kubernetes.LinuxArtifacts()
	if img.ContainerdSource == "tarball" {
		arts = append(append(arts, img.Containerd.LinuxArtifacts()...), img.CNIPlugins.LinuxArtifact())
	}
	if img.Crictl.Version != "" {
		arts = append(arts, img.Crictl.LinuxArtifact())
	}
	if img.InstallJoiner {
		arts = append(arts, versions.Artifact{Name: versions.ArtifactJoiner, FileName: JoinerFileName})
	}
	return arts
}

// NewPlan is the Linux plan of img.
func NewPlan(img node.Image) (Plan, error) {
	plan := Plan{
		KubernetesVersion: img.Kubernetes.Version,
		Kubernetes:        img.Kubernetes,
		PauseImage:        img.PauseImage,
		ContainerdSource:  img.ContainerdSource,
		PackageContainerd: img.PackageContainerd,
		CNI:               img.CNI,
		BridgeSubnet:      img.BridgeSubnet,
		CgroupDriver:      "systemd",
		Proxy:             img.Proxy,
		Generalize:        img.Generalize,
		HostnamePrefix:    img.HostnamePrefix,
		KeepBuildAccount:  img.KeepBuildAccount,
		Staging:           Staging,
		SettleTimeout:     img.SettleTimeout,
		Images:            img.Images,
		RegistryHosts:     img.RegistryHosts,

		Bootstrap:            img.Bootstrap,
		CloudInitDatasources: img.CloudInitDatasources,
	}
	if img.ContainerdSource == "tarball" {
		ctr := img.Containerd.LinuxArtifacts()
		plan.ContainerdTarball, plan.RuncBinary = ctr[0].FileName, ctr[1].FileName
		plan.CNITarball = img.CNIPlugins.LinuxArtifact().FileName
		plan.ContainerdVersion = img.Containerd.Version
	}
	if img.Crictl.Version != "" {
		plan.CrictlVersion, plan.CrictlTarball = img.Crictl.Version, img.Crictl.LinuxArtifact().FileName
	}
	if img.InstallJoiner {
		var err error
		if plan.JoinerConfig, err = joinerConfig(img); err != nil {
			return Plan{}, err
		}
	}
	return plan, nil
}

// joinerConfig is the joiner's configuration baked into the image: how the
// node registers. The seed disc adds the join credentials at first boot.
func joinerConfig(img node.Image) ([]byte, error) {
	jc := joinerconfig.New()
	jc.CRISocket = joinerconfig.DefaultCRISocket
	jc.Labels = img.NodeLabels
	for _, name := range slices.Sorted(maps.Keys(img.KubeletExtraArgs)) {
		jc.KubeletExtraArgs = append(jc.KubeletExtraArgs, kubeadmv1.Arg{Name: name, Value: img.KubeletExtraArgs[name]})
	}
	return jc.Marshal()
}
