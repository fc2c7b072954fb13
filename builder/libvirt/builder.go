// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/packer-plugin-sdk/communicator"
	"github.com/hashicorp/packer-plugin-sdk/multistep"
	"github.com/hashicorp/packer-plugin-sdk/multistep/commonsteps"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/packerbuilderdata"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/confighash"
)

// Builder is the kubenode-libvirt builder.
type Builder struct {
	config Config
	runner multistep.Runner
	// newDriver connects to libvirt; tests replace it.
	newDriver func(uri string) (Driver, error)
}

func (b *Builder) ConfigSpec() hcldec.ObjectSpec { return b.config.FlatMapstructure().HCL2Spec() }

func (b *Builder) Prepare(raws ...interface{}) ([]string, []string, error) {
	b.config.configSHA256 = confighash.Sum(raws...)
	warnings, err := b.config.Prepare(raws...)
	if err != nil {
		return nil, warnings, err
	}
	return generatedDataKeys, warnings, nil
}

// generatedDataKeys are the build variables this builder sets
// (build.OSFamily etc. in templates; the artifact's state for post-processors).
var generatedDataKeys = []string{"OSFamily", "OSVersion", "SeedFlavor", "Firmware", "DiskPath", "Communicator", "Accelerator"}

func (b *Builder) Run(ctx context.Context, ui packersdk.Ui, hook packersdk.Hook) (packersdk.Artifact, error) {
	c := &b.config
	if c.kvmUnavailable != nil {
		ui.Error(tcgFallbackWarning(c.kvmUnavailable))
	}
	newDriver := b.newDriver
	if newDriver == nil {
		newDriver = NewDriver
	}
	driver, err := newDriver(c.LibvirtURI)
	if err != nil {
		return nil, err
	}
	defer driver.Close()

	state := new(multistep.BasicStateBag)
	state.Put(stateConfig, c)
	state.Put(stateDriver, driver)
	state.Put(stateUI, ui)
	state.Put("hook", hook)
	state.Put("debug", c.PackerDebug)
	gen := &packerbuilderdata.GeneratedData{State: state}
	data := c.generatedData()
	for k, v := range data {
		gen.Put(k, v)
	}

	b.runner = commonsteps.NewRunnerWithPauseFn(b.steps(), c.PackerConfig, ui, state)
	b.runner.Run(ctx, state)

	if err, ok := state.GetOk("error"); ok {
		return nil, err.(error)
	}
	if _, ok := state.GetOk(multistep.StateCancelled); ok {
		return nil, errors.New("build was cancelled")
	}
	if _, ok := state.GetOk(multistep.StateHalted); ok {
		return nil, errors.New("build was halted")
	}
	f := c.imageFacts()
	f.Inputs = c.inputs(ui, state)
	f.ConfigSHA256 = c.configSHA256
	facts, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	// The bake, when one ran, left its record for kubenode-export, which
	// takes it later: read it now for the image's labels.
	rec, err := baked.Read(c.PackerBuildName)
	if err != nil {
		ui.Error(fmt.Sprintf("The image's HCP Packer labels lack what kubenode-bake installed: %v", err))
	}
	a := &Artifact{dir: c.OutputDir, StateData: map[string]interface{}{
		"generated_data": state.Get("generated_data"),
		FactsKey:         string(facts),
	}, uri: c.LibvirtURI, labels: imageLabels(c.imageFacts(), rec)}
	switch c.source {
	case sourceISOURLDisk:
		if len(c.ISOUrls) > 0 {
			a.source = absPath(c.ISOUrls[0])
		}
	case sourceDiskImage:
		a.source = absPath(c.DiskImage)
	}
	if v, ok := state.GetOk(stateExportVol); ok {
		a.pool, a.volume, a.dir = state.Get(statePool).(string), v.(string), ""
	}
	if files, ok := state.GetOk(stateExported); ok {
		a.files = files.([]string)
	}
	return a, nil
}

func (b *Builder) steps() []multistep.Step {
	c := &b.config
	// Before anything is downloaded or created: a build that could not
	// keep its firmware state stops now rather than after the install.
	steps := []multistep.Step{&stepCheckFirmwareAccess{}}
	switch c.source {
	case sourceISOURLDisk:
		steps = append(steps, &commonsteps.StepDownload{
			Checksum:    c.ISOChecksum,
			Description: "disk image",
			Extension:   c.TargetExtension,
			ResultKey:   stateBaseDisk,
			TargetPath:  c.TargetPath,
			Url:         c.ISOUrls,
		})
	case sourceInstallISO:
		steps = append(steps, &commonsteps.StepDownload{
			Checksum:    c.ISOChecksum,
			Description: "ISO",
			Extension:   c.TargetExtension,
			ResultKey:   stateISOPath,
			TargetPath:  c.TargetPath,
			Url:         c.ISOUrls,
		}, &stepCheckInstallImage{})
	}
	// disk_image, virtio_win_iso and extra_cdroms given as URLs or with
	// checksums: fetched and checked into Packer's cache.
	for _, f := range c.sourceFiles() {
		if f.download() {
			steps = append(steps, f.step())
		}
	}
	steps = append(steps,
		&commonsteps.StepOutputDir{Force: c.PackerForce, Path: c.OutputDir},
		multistep.If(c.Comm.Type == "ssh", &communicator.StepSSHKeyGen{
			CommConf:            &c.Comm,
			SSHTemporaryKeyPair: c.Comm.SSH.SSHTemporaryKeyPair,
		}),
		&stepCreateSeed{},
		&stepCreateStorage{},
		commonsteps.HTTPServerFromHTTPConfig(&c.HTTPConfig),
		&stepForwardPort{},
		&stepHTTPIPDiscover{},
		&stepDefineDomain{},
		&stepStartDomain{},
		&stepTypeBootCommand{},
		&stepWaitCommunicator{connect: &communicator.StepConnect{
			Config:    &c.Comm,
			Host:      c.commHost,
			SSHConfig: c.Comm.SSHConfigFunc(),
			SSHPort:   c.commPort,
			WinRMPort: c.commPort,
		}},
		new(commonsteps.StepProvision),
		&commonsteps.StepCleanupTempKeys{Comm: &c.Comm},
		&stepShutdown{},
		&stepExport{},
		&stepSaveFirmwareState{},
	)
	return steps
}

// commHost: on user-mode networking the communicator goes to the forwarded
// port on this machine's loopback; on a libvirt network or bridge, to the
// address libvirt learns from DHCP leases, the guest agent or ARP.
// StepConnect calls it again until it answers or the timeout passes.
func (c *Config) commHost(state multistep.StateBag) (string, error) {
	if c.Comm.Host() != "" {
		return c.Comm.Host(), nil
	}
	if c.Network == "user" {
		return "127.0.0.1", nil
	}
	d := state.Get(stateDriver).(Driver)
	addr, err := d.GuestAddress(c.VMName)
	if err != nil {
		return "", fmt.Errorf("waiting for the guest's address (DHCP lease, guest agent or ARP; set ssh_host or winrm_host if none of them can know it): %w", err)
	}
	return addr, nil
}

func (c *Config) commPort(state multistep.StateBag) (int, error) {
	if p, ok := state.GetOk(stateHostPort); ok {
		return p.(int), nil
	}
	return c.Comm.Port(), nil
}

// imageFacts is what the build tells later components about the image.
func (c *Config) imageFacts() ImageFacts {
	f := ImageFacts{OSFamily: "unknown", Firmware: c.Firmware, Communicator: c.Comm.Type, Accelerator: c.Accelerator}
	switch {
	case c.Windows != nil:
		f.OSFamily, f.OSVersion = "windows", c.Windows.Version
		f.OSEdition = c.windowsSeed().Edition
		if f.OSEdition == "" {
			f.OSEdition = "datacenter"
		}
		if c.Windows.Experience == "desktop" {
			f.OSEdition += "-desktop"
		} else {
			f.OSEdition += "-core"
		}
	case c.Linux != nil:
		f.OSFamily, f.SeedFlavor = "linux", c.Linux.Flavor
	}
	return f
}

// generatedData are the build variables (build.OSFamily, ...) templates see.
func (c *Config) generatedData() map[string]interface{} {
	f := c.imageFacts()
	return map[string]interface{}{
		"OSFamily":     f.OSFamily,
		"OSVersion":    f.OSVersion,
		"SeedFlavor":   f.SeedFlavor,
		"Firmware":     f.Firmware,
		"DiskPath":     c.OutputDir + "/" + c.VMName + ".qcow2",
		"Communicator": f.Communicator,
		"Accelerator":  f.Accelerator,
	}
}
