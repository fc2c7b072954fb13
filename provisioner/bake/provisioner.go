package bake

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2/hcldec"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
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
func (p *Provisioner) Prepare(raws ...interface{}) error { return p.config.Prepare(raws...) }

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
	if guest == "windows" {
		return p.provisionWindows(ctx, ui, comm, generated)
	}
	return p.provisionLinux(ctx, ui, r, generated)
}

func (p *Provisioner) provisionLinux(ctx context.Context, ui packersdk.Ui, r *remote.Remote, generated map[string]interface{}) error {
	c := &p.config
	plan, arts, err := c.linuxPlan()
	if err != nil {
		return err
	}
	ui.Say(fmt.Sprintf("kubenode-bake: Kubernetes %s, containerd from %s, cni %s, pause image %s",
		plan.KubernetesVersion, c.ContainerdSource, c.CNI, plan.PauseImage))
	ui.Say(crictlSummary(plan.CrictlVersion))
	if plan.Bootstrap == node.BootstrapClusterAPI {
		ui.Say(fmt.Sprintf(`kubenode-bake: bootstrap = "cluster-api": cloud-init (datasources %s) runs Cluster API's kubeadm join; no joiner`, strings.Join(plan.CloudInitDatasources, ", ")))
	}
	arts, err = c.fetchOptions().Resolve(ctx, ui, arts)
	if err != nil {
		return err
	}
	if arts, err = c.linuxImages(ui, &plan, arts); err != nil {
		return err
	}

	plan.KeepBuildAccount = c.KeepBuildAccount
	srv, err := c.artifactServer(ui, generated, arts)
	if err != nil {
		return err
	}
	if srv != nil {
		defer srv.Close()
	}
	rec, changed, err := linux.Run(ctx, ui, r, plan, arts, srv)
	if err != nil {
		return err
	}
	rec.Facts.Bootstrap = c.Bootstrap
	rec.Facts.Unlisted = c.versionWarnings()
	facts := rec.Facts
	if err := baked.Write(c.PackerBuildName, rec); err != nil {
		return fmt.Errorf("recording what was baked for kubenode-export: %w", err)
	}
	ui.Say(fmt.Sprintf("kubenode-bake: done, %d changes (Kubernetes %s, containerd %s, CNI plugins %s)", changed, facts.Kubernetes, facts.Containerd, facts.CNIPlugins))
	return nil
}

// provisionWindows bakes a Windows guest: its release from the build number
// it reports, the artifacts resolved (and checked) on this machine, then
// windows.Bake, and what was baked recorded for kubenode-export.
func (p *Provisioner) provisionWindows(ctx context.Context, ui packersdk.Ui, comm packersdk.Communicator, generated map[string]interface{}) error {
	c := &p.config
	r := &remote.Remote{Comm: comm, UI: ui}
	win, guest, err := windows.Guest(ctx, r)
	if err != nil {
		return err
	}
	plan, arts, err := c.windowsPlan(win)
	if err != nil {
		return err
	}
	ui.Say(crictlSummary(plan.Crictl.Version))
	if arts, err = c.fetchOptions().Resolve(ctx, ui, arts); err != nil {
		return err
	}
	imageArts, err := c.windowsImageUploads(ui, &plan)
	if err != nil {
		return err
	}
	arts = append(arts, imageArts...)
	srv, err := c.artifactServer(ui, generated, arts)
	if err != nil {
		return err
	}
	if srv != nil {
		defer srv.Close()
	}
	facts, err := windows.Bake(ctx, ui, comm, plan, arts, srv)
	if err != nil {
		return err
	}
	facts.Bootstrap = c.Bootstrap
	facts.Unlisted = c.versionWarnings()
	if err := baked.Write(c.PackerBuildName, baked.Record{Facts: facts, OS: guest}); err != nil {
		return fmt.Errorf("recording what was baked for kubenode-export: %w", err)
	}
	return nil
}
