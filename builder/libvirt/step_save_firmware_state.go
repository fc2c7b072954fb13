// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"libvirt.org/go/libvirtxml"

	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
)

// Where libvirt keeps a domain's vTPM state (by UUID) and UEFI variables.
var (
	swtpmStateDir = "/var/lib/libvirt/swtpm"
	nvramDir      = "/var/lib/libvirt/qemu/nvram"
)

// Names of the firmware state kept beside the disk image.
const (
	efiVarsFile = "efivars.fd"
	tpmStateDir = "tpm"
)

// stepSaveFirmwareState copies the powered-off VM's UEFI variables and
// vTPM state into output_directory, so they travel with the image (a
// Windows install's boot entries live in the EFI variables; BitLocker and
// measured boot state in the TPM). It reads the files libvirt keeps on the
// hypervisor, so it works for a local hypervisor only and says so otherwise.
// Undefining the domain (stepDefineDomain's cleanup) removes the originals.
//
// Uses: config, driver, ui, exported. Produces: exported (adds the copies).
type stepSaveFirmwareState struct{}

func (s *stepSaveFirmwareState) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	d := state.Get(stateDriver).(Driver)
	ui := state.Get(stateUI).(packersdk.Ui)
	if c.Firmware != "uefi" && !c.TPM {
		return multistep.ActionContinue
	}
	if c.KeepInPool || !isLocalURI(c.LibvirtURI) {
		ui.Message("EFI variables and TPM state stay on the hypervisor and are removed with the build VM: they are kept only for a local libvirt_uri without keep_in_pool")
		return multistep.ActionContinue
	}
	saved, err := saveFirmwareState(d, c.VMName, c.OutputDir)
	if err != nil {
		return halt(state, ui, fmt.Errorf("keeping the firmware state: %w", err))
	}
	for _, p := range saved {
		ui.Message("Kept " + p)
	}
	exported, _ := state.Get(stateExported).([]string)
	state.Put(stateExported, append(exported, saved...))
	return multistep.ActionContinue
}

func (s *stepSaveFirmwareState) Cleanup(multistep.StateBag) {}

// saveFirmwareState copies the domain's NVRAM file and TPM state directory
// into dir and returns what it wrote.
func saveFirmwareState(d Driver, name, dir string) ([]string, error) {
	x, err := d.DomainXML(name)
	if err != nil {
		return nil, err
	}
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(x); err != nil {
		return nil, fmt.Errorf("reading the XML of domain %q: %w", name, err)
	}
	var saved []string
	if nvram := nvramPath(&dom); nvram != "" {
		dst := filepath.Join(dir, efiVarsFile)
		if err := safefile.Copy(nvram, dst, 0o600); err != nil {
			return saved, fmt.Errorf("EFI variables: %w", err)
		}
		saved = append(saved, dst)
	}
	if dom.Devices != nil && len(dom.Devices.TPMs) > 0 && dom.UUID != "" {
		src := filepath.Join(swtpmStateDir, dom.UUID)
		dst := filepath.Join(dir, tpmStateDir)
		if err := copyTree(src, dst); err != nil {
			return saved, fmt.Errorf("TPM state: %w", err)
		}
		saved = append(saved, dst)
	}
	return saved, nil
}

// nvramPath is the domain's UEFI variable store: the <nvram> of its XML,
// or, with firmware="efi" autoselection (which records the path only while
// the domain runs), libvirt's default <name>_VARS.fd.
func nvramPath(dom *libvirtxml.Domain) string {
	if dom.OS == nil {
		return ""
	}
	if dom.OS.NVRam != nil && dom.OS.NVRam.NVRam != "" {
		return dom.OS.NVRam.NVRam
	}
	if dom.OS.Firmware == "efi" {
		return filepath.Join(nvramDir, dom.Name+"_VARS.fd")
	}
	return ""
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		return safefile.Copy(p, target, 0o600)
	})
}
