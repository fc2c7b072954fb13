package bake

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strings"

	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	joinerconfig "github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/linux"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/windows"
)

// linuxPlan turns the configuration into the Linux plan and the artifacts
// it needs.
func (c *Config) linuxPlan() (linux.Plan, []versions.Artifact, error) {
	r := c.releases()
	k8s := r.k8s
	if r.errK != nil {
		return linux.Plan{}, nil, r.errK
	}
	plan := linux.Plan{
		KubernetesVersion: k8s.Version,
		PauseImage:        c.PauseImage,
		ContainerdSource:  c.ContainerdSource,
		CNI:               c.CNI,
		BridgeSubnet:      c.BridgeSubnet,
		CgroupDriver:      "systemd",
		Proxy:             node.Proxy{HTTP: c.HTTPProxy, HTTPS: c.HTTPSProxy, No: c.NoProxy},
		Generalize:        *c.Generalize,
		HostnamePrefix:    c.HostnamePrefix,
		Staging:           linux.Staging,
		SettleTimeout:     c.SettleTimeout,

		Bootstrap:            c.Bootstrap,
		CloudInitDatasources: c.CloudInitDatasources,
	}
	if plan.PauseImage == "" {
		plan.PauseImage = k8s.PauseImage
	}
	arts := k8s.LinuxArtifacts()
	if c.ContainerdSource == "tarball" {
		if err := errors.Join(r.errC, r.errN); err != nil {
			return linux.Plan{}, nil, err
		}
		ctrArts := r.ctr.LinuxArtifacts()
		cniArt := r.cni.LinuxArtifact()
		arts = append(append(arts, ctrArts...), cniArt)
		plan.ContainerdTarball, plan.RuncBinary, plan.CNITarball = ctrArts[0].FileName, ctrArts[1].FileName, cniArt.FileName
	}
	var err error
	if arts, err = c.linuxBasics(&plan, arts); err != nil {
		return linux.Plan{}, nil, err
	}
	if *c.InstallJoiner {
		arts = append(arts, versions.Artifact{Name: versions.ArtifactJoiner, FileName: "kubenode-joiner"})
		plan.JoinerConfig, err = c.joinerConfig(joinerconfig.DefaultCRISocket)
		if err != nil {
			return linux.Plan{}, nil, err
		}
	}
	return plan, arts, nil
}

// joinerConfig is the joiner's configuration baked into the image: how the
// node registers. The seed disc adds the join credentials at first boot.
func (c *Config) joinerConfig(criSocket string) ([]byte, error) {
	jc := joinerconfig.New()
	jc.CRISocket = criSocket
	jc.Labels = c.NodeLabels
	for _, name := range sortedKeys(c.KubeletExtraArgs) {
		jc.KubeletExtraArgs = append(jc.KubeletExtraArgs, kubeadmv1.Arg{Name: name, Value: c.KubeletExtraArgs[name]})
	}
	return jc.Marshal()
}

// windowsPlan turns the configuration into the Windows plan for the
// guest's release and the artifacts it needs.
func (c *Config) windowsPlan(win versions.WindowsRelease) (windows.Plan, []versions.Artifact, error) {
	r := c.releases()
	if err := errors.Join(r.errK, r.errC, r.errN); err != nil {
		return windows.Plan{}, nil, err
	}
	plan := windows.Plan{
		Windows: win, Kubernetes: r.k8s, Containerd: r.ctr, CNIPlugins: r.cni,
		PauseImage:           c.PauseImage,
		Proxy:                node.Proxy{HTTP: c.HTTPProxy, HTTPS: c.HTTPSProxy, No: c.NoProxy},
		CNI:                  c.CNI,
		DefenderExclusions:   c.DefenderExclusions == nil || *c.DefenderExclusions,
		HyperV:               c.HyperV,
		InstallJoiner:        c.InstallJoiner == nil || *c.InstallJoiner,
		NodeLabels:           c.NodeLabels,
		KubeletExtraArgs:     c.KubeletExtraArgs,
		RestartTimeout:       c.RestartTimeout,
		WindowsUpdate:        c.WindowsUpdate,
		WindowsUpdateTimeout: c.WindowsUpdateTimeout,
		AutomaticUpdates:     c.WindowsAutomaticUpdates,
		Generalize:           c.Generalize == nil || *c.Generalize,
	}
	if c.Bootstrap == node.BootstrapClusterAPI {
		plan.ClusterAPI = true
		plan.CloudbaseInit = versions.CloudbaseInit
		plan.CloudbaseInitMetadataServices = c.CloudbaseInitMetadataServices
	}
	if plan.Generalize {
		var err error
		if plan.FirstBoot, err = c.windowsFirstBoot(plan.ClusterAPI); err != nil {
			return windows.Plan{}, nil, err
		}
		plan.RandomClonePassword = c.CloneAdminPassword == ""
	}
	if err := c.windowsImages(&plan); err != nil {
		return windows.Plan{}, nil, err
	}
	arts := append(r.k8s.WindowsArtifacts(), r.ctr.WindowsArtifact(), r.cni.WindowsArtifact())
	if plan.InstallJoiner {
		arts = append(arts, versions.Artifact{Name: versions.ArtifactJoiner, FileName: windows.JoinerFileName})
	}
	if plan.ClusterAPI {
		arts = append(arts, plan.CloudbaseInit.WindowsArtifact())
	}
	plan, arts, errB := c.windowsBasics(plan, arts)
	if errB != nil {
		return windows.Plan{}, nil, errB
	}
	plan = plan.WithDefaults()
	if err := plan.Validate(); err != nil {
		return windows.Plan{}, nil, err
	}
	return plan, arts, nil
}

// windowsFirstBoot renders the clone's first-boot answer file: a random
// computer name, OOBE skipped, the joiner service set to start, or with
// clusterAPI cloudbase-init's unattend run (specialize pass, as SYSTEM: a
// clone has no automatic logon, so first-logon commands would wait for
// someone to log on), and the Administrator password
// clone_admin_password or a random one made for this build, which only
// takes Setup past the welcome screens: each clone's first boot replaces it
// with one of its own (windows.Plan.RandomClonePassword).
func (c *Config) windowsFirstBoot(clusterAPI bool) ([]byte, error) {
	pw := c.CloneAdminPassword
	if pw == "" {
		var err error
		if pw, err = randomWindowsPassword(); err != nil {
			return nil, fmt.Errorf("clone_admin_password: making a random one: %w", err)
		}
	}
	fb := autounattend.WindowsFirstBoot{Password: pw}
	if clusterAPI {
		fb.Commands = []string{windows.CloudbaseInitUnattendCommand}
	}
	xml, err := autounattend.RenderWindowsFirstBoot(fb)
	if err != nil {
		return nil, fmt.Errorf("clone_admin_password: %w", err)
	}
	return xml, nil
}

// randomWindowsPassword is windows.PasswordLength characters with each
// class of windows.PasswordClasses, as a clone's first boot makes them.
func randomWindowsPassword() (string, error) {
	classes := windows.PasswordClasses
	all := strings.Join(classes, "")
	pick := func(set string) (byte, error) {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(set))))
		if err != nil {
			return 0, err
		}
		return set[n.Int64()], nil
	}
	var b []byte
	for i := 0; i < windows.PasswordLength; i++ {
		set := all
		if i < len(classes) {
			set = classes[i]
		}
		c, err := pick(set)
		if err != nil {
			return "", err
		}
		b = append(b, c)
	}
	return string(b), nil
}
