// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/ctxio"
)

// stepExport makes the finished disk: a flattened qcow2 copy of the build
// disk (no backing file), downloaded into output_directory, or kept as a
// volume in storage_pool with keep_in_pool. The file is written under a
// temporary name and renamed when complete. The copy is as large as the
// build disk.
//
// Uses: config, driver, ui, pool, disk_volume, disk_size. Produces:
// exported, export_volume.
type stepExport struct {
	tmp    string
	volume string
}

func (s *stepExport) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	d := state.Get(stateDriver).(Driver)
	ui := state.Get(stateUI).(packersdk.Ui)
	pool := state.Get(statePool).(string)
	disk := state.Get(stateDiskVolume).(string)
	size := state.Get(stateDiskSize).(uint64)

	name := c.VMName + "-export.qcow2"
	if c.KeepInPool {
		name = c.VMName
	}
	ui.Say(fmt.Sprintf("Flattening the build disk into volume %s", name))
	if _, err := d.CopyVolume(pool, disk, Volume{Name: name, Format: "qcow2", Capacity: size}); err != nil {
		return halt(state, ui, err)
	}
	if c.KeepInPool {
		state.Put(stateExportVol, name)
		ui.Say(fmt.Sprintf("The image is volume %s in pool %s", name, pool))
		if note := cloneHardwareNote(c); note != "" {
			ui.Say(note)
		}
		return multistep.ActionContinue
	}
	s.volume = name

	dst := filepath.Join(c.OutputDir, c.VMName+".qcow2")
	f, err := os.CreateTemp(c.OutputDir, "."+c.VMName+".*.tmp")
	if err != nil {
		return halt(state, ui, err)
	}
	s.tmp = f.Name()
	ui.Say(fmt.Sprintf("Downloading the image to %s", dst))
	w := &countingWriter{w: f}
	err = d.DownloadVolume(pool, name, ctxio.Writer{Ctx: ctx, W: w})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return halt(state, ui, err)
	}
	if err := os.Rename(s.tmp, dst); err != nil {
		return halt(state, ui, err)
	}
	s.tmp = ""
	ui.Message(fmt.Sprintf("Wrote %s (%.1f MiB)", dst, float64(w.n)/(1<<20)))
	exported := []string{dst}
	if p, _ := state.Get(stateSerialLog).(string); p != "" {
		if _, err := os.Stat(p); err == nil {
			exported = append(exported, p)
		}
	}
	state.Put(stateExported, exported)
	if note := cloneHardwareNote(c); note != "" {
		ui.Say(note)
	}
	return multistep.ActionContinue
}

// busNames are what a disk_bus is called where VMs are made.
var busNames = map[string]string{"virtio": "virtio-blk", "scsi": "VirtIO-SCSI", "sata": "SATA"}

// cloneHardwareNote says, for a Windows image, on which bus its clones
// must attach the disk: kubenode-bake generalizes Windows with sysprep
// /mode:vm, which keeps the drivers of the build's virtual hardware
// instead of detecting the hardware again, so a clone whose boot disk is
// on another bus may find no driver for it loaded at boot and stop with
// INACCESSIBLE_BOOT_DEVICE (Microsoft's "Sysprep command-line options":
// deploy a /mode:vm image on the same hardware profile). "" for Linux.
func cloneHardwareNote(c *Config) string {
	if c.Windows == nil {
		return ""
	}
	other := "VirtIO-SCSI, Proxmox's default"
	if c.DiskBus == "scsi" {
		other = "virtio-blk, libvirt's and KubeVirt's default"
	}
	return fmt.Sprintf("Windows image: attach its disk to every VM made from it on %s, the bus of this build (disk_bus = %q), "+
		"with q35 and UEFI as here: kubenode-bake generalizes with sysprep /mode:vm, which keeps this VM's drivers, "+
		"and on another bus (%s) a clone may stop at boot with INACCESSIBLE_BOOT_DEVICE",
		busNames[c.DiskBus], c.DiskBus, other)
}

func (s *stepExport) Cleanup(state multistep.StateBag) {
	if s.tmp != "" {
		os.Remove(s.tmp)
		s.tmp = ""
	}
	if s.volume != "" {
		d := state.Get(stateDriver).(Driver)
		if err := d.DeleteVolume(state.Get(statePool).(string), s.volume); err != nil {
			state.Get(stateUI).(packersdk.Ui).Error(fmt.Sprintf("cleanup: %v", err))
		}
		s.volume = ""
	}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
