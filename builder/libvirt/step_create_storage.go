// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/ctxio"
)

// stepCreateStorage creates the build's pool (unless storage_pool names an
// existing one), uploads the base disk and every ISO into volumes, and
// creates the build disk. Cleanup deletes exactly the volumes and pool it
// created.
//
// A base disk is checked against disk_size before anything is created.
// The build disk is disk_size large, or as large as the base disk when
// that is larger and disk_size was left unset; disk_size says which.
//
// Uses: config, driver, ui, iso_path, base_disk, virtio_win_iso,
// extra_cdrom_<i>, seed_iso. Produces: pool, disk_volume, disk_path,
// disk_size, cdroms.
type stepCreateStorage struct {
	pool    string
	ownPool bool
	volumes []string // created, in order
}

func (s *stepCreateStorage) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	d := state.Get(stateDriver).(Driver)
	ui := state.Get(stateUI).(packersdk.Ui)

	// The base disk: disk_image (downloaded, or a local path), or iso_url
	// with disk_image = true. It is read here, before the upload, so a
	// disk_size smaller than the image stops the build before any volume
	// or domain exists.
	baseDisk, size := "", c.diskSize
	files := c.sourceFiles()
	switch c.source {
	case sourceISOURLDisk:
		baseDisk, _ = state.Get(stateBaseDisk).(string)
	case sourceDiskImage:
		baseDisk = files[0].path(state)
		files = files[1:]
	}
	if baseDisk != "" {
		base, err := diskVirtualSize(baseDisk)
		if err != nil {
			return halt(state, ui, fmt.Errorf("%s: %s: %w", c.baseDiskKey(), baseDisk, err))
		}
		if size, err = c.diskSizeForBase(base); err != nil {
			return halt(state, ui, err)
		}
	}

	s.pool = c.StoragePool
	if s.pool == "" {
		suffix := randomSuffix()
		s.pool = "kubenode-" + c.VMName + "-" + suffix
		dir := c.PoolPath
		if dir == "" {
			dir = path.Join("/var/lib/libvirt/images", s.pool)
		}
		ui.Say(fmt.Sprintf("Creating storage pool %s at %s", s.pool, dir))
		if err := d.CreatePool(s.pool, dir); err != nil {
			return halt(state, ui, err)
		}
		s.ownPool = true
	}
	state.Put(statePool, s.pool)

	disk := Volume{Name: c.VMName + ".qcow2", Format: "qcow2", Capacity: size}
	if baseDisk != "" {
		base := c.VMName + "-base"
		format, err := DiskFormat(baseDisk)
		if err != nil {
			return halt(state, ui, fmt.Errorf("%s: %w", c.baseDiskKey(), err))
		}
		basePath, err := s.upload(ctx, d, ui, baseDisk, Volume{Name: base, Format: format})
		if err != nil {
			return halt(state, ui, fmt.Errorf("%s: %w", c.baseDiskKey(), err))
		}
		if *c.UseBackingFile {
			disk.BackingPath, disk.BackingFormat = basePath, format
		} else {
			ui.Say("Copying the base disk into the build disk")
			p, err := d.CopyVolume(s.pool, base, disk)
			if err != nil {
				return halt(state, ui, err)
			}
			s.volumes = append(s.volumes, disk.Name)
			state.Put(stateDiskVolume, disk.Name)
			state.Put(stateDiskPath, p)
			state.Put(stateDiskSize, size)
			disk.Name = ""
		}
	}
	if disk.Name != "" {
		ui.Say(fmt.Sprintf("Creating build disk %s (%s)", disk.Name, formatSize(size)))
		p, err := d.CreateVolume(s.pool, disk)
		if err != nil {
			return halt(state, ui, err)
		}
		s.volumes = append(s.volumes, disk.Name)
		state.Put(stateDiskVolume, disk.Name)
		state.Put(stateDiskPath, p)
		state.Put(stateDiskSize, size)
	}

	var isos []string
	if p, ok := state.GetOk(stateISOPath); ok && p.(string) != "" && c.source == sourceInstallISO {
		isos = append(isos, p.(string))
	}
	for _, f := range files { // virtio_win_iso, then extra_cdroms
		isos = append(isos, f.path(state))
	}
	if p, ok := state.GetOk(stateSeedISO); ok {
		isos = append(isos, p.(string))
	}
	var cdroms []string
	for i, iso := range isos {
		p, err := s.upload(ctx, d, ui, iso, Volume{Name: fmt.Sprintf("%s-cd%d.iso", c.VMName, i), Format: "raw"})
		if err != nil {
			return halt(state, ui, err)
		}
		cdroms = append(cdroms, p)
	}
	state.Put(stateCDROMs, cdroms)
	return multistep.ActionContinue
}

// upload puts a local file into a new volume of the build's pool, with a
// progress bar.
func (s *stepCreateStorage) upload(ctx context.Context, d Driver, ui packersdk.Ui, file string, v Volume) (string, error) {
	ui.Say(fmt.Sprintf("Uploading %s into volume %s", file, v.Name))
	p, err := UploadFile(ctx, d, s.pool, file, v, func(size int64, r io.ReadCloser) io.ReadCloser {
		return ui.TrackProgress(path.Base(file), 0, size, r)
	})
	if err != nil {
		return "", err
	}
	s.volumes = append(s.volumes, v.Name)
	return p, nil
}

// UploadFile creates volume v in pool, the size of a local file, streams
// the file into it and returns the volume's path on the hypervisor. track,
// if not nil, wraps the stream (a progress bar). When the upload fails the
// volume is deleted again.
func UploadFile(ctx context.Context, d Driver, pool, file string, v Volume, track func(size int64, r io.ReadCloser) io.ReadCloser) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	v.Capacity = uint64(st.Size())
	p, err := d.CreateVolume(pool, v)
	if err != nil {
		return "", err
	}
	var body io.ReadCloser = io.NopCloser(ctxio.Reader{Ctx: ctx, R: f})
	if track != nil {
		body = track(st.Size(), body)
	}
	defer body.Close()
	if err := d.UploadVolume(pool, v.Name, body, st.Size()); err != nil {
		if derr := d.DeleteVolume(pool, v.Name); derr != nil {
			err = fmt.Errorf("%w (and deleting the volume: %v; virsh vol-delete %s --pool %s)", err, derr, v.Name, pool)
		}
		return "", err
	}
	return p, nil
}

func (s *stepCreateStorage) Cleanup(state multistep.StateBag) {
	if s.pool == "" {
		return
	}
	d := state.Get(stateDriver).(Driver)
	ui := state.Get(stateUI).(packersdk.Ui)
	for i := len(s.volumes) - 1; i >= 0; i-- {
		if err := d.DeleteVolume(s.pool, s.volumes[i]); err != nil {
			ui.Error(fmt.Sprintf("cleanup: %v (delete it with: virsh vol-delete %s --pool %s)", err, s.volumes[i], s.pool))
		}
	}
	s.volumes = nil
	if s.ownPool {
		if err := d.DeletePool(s.pool); err != nil {
			ui.Error(fmt.Sprintf("cleanup: %v (remove it with: virsh pool-destroy %[2]s; virsh pool-delete %[2]s; virsh pool-undefine %[2]s)", err, s.pool))
		}
	}
	s.pool = ""
}

// DiskFormat tells a qcow2 image from a raw one by the qcow2 magic.
func DiskFormat(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	if string(magic) == "QFI\xfb" {
		return "qcow2", nil
	}
	return "raw", nil
}

func randomSuffix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
