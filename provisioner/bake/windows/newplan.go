// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Artifacts are the files a Windows guest gets for img, in order: the
// Kubernetes binaries, containerd, the CNI plugins, the joiner,
// cloudbase-init (Cluster API), crictl. The images' archives are added
// later.
func Artifacts(img node.Image) []versions.Artifact {
	arts := append(img.Kubernetes.WindowsArtifacts(), img.Containerd.WindowsArtifact(), img.CNIPlugins.WindowsArtifact())
	if img.InstallJoiner {
		arts = append(arts, versions.Artifact{Name: versions.ArtifactJoiner, FileName: JoinerFileName})
	}
	if img.Bootstrap == node.BootstrapClusterAPI {
		arts = append(arts, img.CloudbaseInit.WindowsArtifact())
	}
	if img.Crictl.Version != "" {
		arts = append(arts, img.Crictl.WindowsArtifact())
	}
	return arts
}

// NewPlan is the Windows plan of img, with its defaults, checked.
func NewPlan(img node.Image) (Plan, error) {
	plan := Plan{
		Windows: img.Windows, Kubernetes: img.Kubernetes, Containerd: img.Containerd, CNIPlugins: img.CNIPlugins,
		PauseImage:            img.PauseImage,
		Proxy:                 img.Proxy,
		CNI:                   img.CNI,
		DefenderExclusions:    img.DefenderExclusions,
		HyperV:                img.HyperV,
		NTPServers:            img.NTPServers,
		WindowsFeatures:       img.WindowsFeatures,
		InstallJoiner:         img.InstallJoiner,
		NodeLabels:            img.NodeLabels,
		KubeletExtraArgs:      img.KubeletExtraArgs,
		KubeletPriorityClass:  img.KubeletPriorityClass,
		KubeletSystemReserved: img.KubeletSystemReserved,
		KubeletKubeReserved:   img.KubeletKubeReserved,
		RestartTimeout:        img.RestartTimeout,
		WindowsUpdate:         img.WindowsUpdate,
		WindowsUpdateTimeout:  img.WindowsUpdateTimeout,
		AutomaticUpdates:      img.AutomaticUpdates,
		Generalize:            img.Generalize,
		Images:                img.Images,
		RegistryHosts:         img.RegistryHosts,
	}
	if img.Bootstrap == node.BootstrapClusterAPI {
		plan.ClusterAPI = true
		plan.CloudbaseInit = img.CloudbaseInit
		plan.CloudbaseInitMetadataServices = img.CloudbaseInitMetadataServices
	}
	if plan.Generalize {
		var err error
		if plan.FirstBoot, err = cloneAnswerFile(img.CloneAdminPassword, plan.ClusterAPI); err != nil {
			return Plan{}, err
		}
		plan.RandomClonePassword = img.CloneAdminPassword == ""
	}
	if img.Crictl.Version != "" {
		plan.InstallCrictl, plan.Crictl = true, img.Crictl
	}
	plan = plan.WithDefaults()
	if err := plan.Validate(); err != nil {
		return Plan{}, err
	}
	return plan, nil
}

// cloneAnswerFile renders the clone's first-boot answer file: a random
// computer name, OOBE skipped, the joiner service set to start, or with
// clusterAPI cloudbase-init's unattend run (specialize pass, as SYSTEM: a
// clone has no automatic logon, so first-logon commands would wait for
// someone to log on), and the Administrator password pw (clone_admin_password)
// or, when empty, a random one made for this build, which only takes Setup
// past the welcome screens: each clone's first boot replaces it with one of
// its own (Plan.RandomClonePassword).
func cloneAnswerFile(pw string, clusterAPI bool) ([]byte, error) {
	if pw == "" {
		var err error
		if pw, err = randomPassword(); err != nil {
			return nil, fmt.Errorf("clone_admin_password: making a random one: %w", err)
		}
	}
	fb := autounattend.WindowsFirstBoot{Password: pw}
	if clusterAPI {
		fb.Commands = []string{CloudbaseInitUnattendCommand}
	}
	xml, err := autounattend.RenderWindowsFirstBoot(fb)
	if err != nil {
		return nil, fmt.Errorf("clone_admin_password: %w", err)
	}
	return xml, nil
}

// randomPassword is PasswordLength characters with each class of
// PasswordClasses, as a clone's first boot makes them.
func randomPassword() (string, error) {
	all := strings.Join(PasswordClasses, "")
	var b []byte
	for i := 0; i < PasswordLength; i++ {
		set := all
		if i < len(PasswordClasses) {
			set = PasswordClasses[i]
		}
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(set))))
		if err != nil {
			return "", err
		}
		b = append(b, set[n.Int64()])
	}
	return string(b), nil
}
