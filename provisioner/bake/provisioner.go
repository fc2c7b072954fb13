// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2/hcldec"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/confighash"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/linux"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/windows"
)

// Provisioner is kubenode-bake.
type Provisioner struct {
	config Config
}

// ConfigSpec is the HCL2 spec (generated).
func (p *Provisioner) ConfigSpec() hcldec.ObjectSpec { return p.config.FlatMapstructure().HCL2Spec() }

// Prepare validates the configuration.
func (p *Provisioner) Prepare(raws ...interface{}) error {
	p.config.configSHA256 = confighash.Sum(raws...)
	return p.config.Prepare(raws...)
}

// Provision bakes the guest.
func (p *Provisioner) Provision(ctx context.Context, ui packersdk.Ui, comm packersdk.Communicator, generated map[string]interface{}) error {
	c := &p.config
	for _, w := range c.warnings {
		ui.Error("kubenode-bake: warning: " + w)
	}
	if err := c.checkImageArchives(); err != nil {
		return err
	}
	guest := c.GuestOS
	r := &remote.Remote{Comm: comm, UI: ui}
	if guest == "" {
		code, out, err := r.Exec(ctx, "uname -s")
		if err != nil {
			return fmt.Errorf("asking the guest for its OS: %w", err)
		}
		guest = "windows"
		if code == 0 && strings.TrimSpace(out) == "Linux" {
			guest = "linux"
		}
		ui.Say(fmt.Sprintf("kubenode-bake: the guest runs %s", guest))
	}
	if err := errors.Join(c.guestRefusals(guest)...); err != nil {
		return err
	}
	return c.bake(ctx, ui, r, guest, generated)
}

// bake describes the node for guest (a Windows guest is asked for its
// release first), resolves its artifacts and images, has the OS package
// bake it, and records what was baked for kubenode-export.
func (c *Config) bake(ctx context.Context, ui packersdk.Ui, r *remote.Remote, guest string, generated map[string]interface{}) error {
	bake := linux.Bake
	var win versions.WindowsRelease
	if guest == "windows" {
		bake = windows.Bake
		var err error
		if win, err = windows.Release(ctx, r); err != nil {
			return err
		}
		// Only now are both known: the guest's release and the kubelet's.
		if w := c.releases().k8s.WindowsWarning(win); w != "" {
			ui.Error("kubenode-bake: warning: " + w)
		}
	}
	img, err := c.nodeImage(guest, win)
	if err != nil {
		return err
	}
	// The plan is checked before the downloads.
	if guest == "windows" {
		_, err = windows.NewPlan(img)
	} else {
		_, err = linux.NewPlan(img)
		ui.Say(fmt.Sprintf("kubenode-bake: Kubernetes %s, containerd from %s, cni %s, pause image %s",
			img.Kubernetes.Version, img.ContainerdSource, img.CNI, img.PauseImage))
	}
	if err != nil {
		return err
	}
	ui.Say(crictlSummary(img.Crictl.Version))
	if guest == "linux" && img.Bootstrap == node.BootstrapClusterAPI {
		ui.Say(fmt.Sprintf(`kubenode-bake: bootstrap = "cluster-api": cloud-init (datasources %s) runs Cluster API's kubeadm join; no joiner`, strings.Join(img.CloudInitDatasources, ", ")))
	}
	if img.Artifacts, err = c.fetchOptions().Resolve(ctx, ui, img.Artifacts); err != nil {
		return err
	}
	if err := c.withImages(ui, &img); err != nil {
		return err
	}
	srv, err := c.artifactServer(ui, generated, img.Artifacts)
	if err != nil {
		return err
	}
	if srv != nil {
		defer srv.Close()
	}
	rec, err := bake(ctx, ui, r, img, srv)
	if err != nil {
		return err
	}
	rec.Facts.Unlisted = c.versionWarnings()
	rec.Inventory.Artifacts, rec.Inventory.Inputs = inventory(img, rec.Facts)
	rec.ConfigSHA256 = c.configSHA256
	if err := baked.Write(c.PackerBuildName, rec); err != nil {
		return fmt.Errorf("recording what was baked for kubenode-export: %w", err)
	}
	return nil
}

// inventory lists what the bake put on the guest, for the image's SBOM:
// each artifact with its release (the joiner's as the installed binary
// reported it), and apart the images archives, which the provenance names
// as inputs (their images are in facts.Images).
func inventory(img node.Image, facts baked.Facts) (arts, inputs []baked.Artifact) {
	for _, a := range img.Artifacts {
		if strings.HasPrefix(a.Name, imageArtifactPrefix) {
			inputs = append(inputs, baked.Artifact{Name: a.FileName, SHA256: a.SHA256})
			continue
		}
		v := img.ArtifactVersion(a.Name)
		if a.Name == versions.ArtifactJoiner {
			v = facts.Joiner
		}
		arts = append(arts, baked.Artifact{Name: a.Name, Version: v, URL: a.URL, SHA256: a.SHA256})
	}
	return arts, inputs
}
