// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
	"github.com/kubenode/packer-plugin-kubenode/internal/ctxio"
)

// newDriver connects to libvirt; tests may replace it.
var newDriver = libvirt.NewDriver

// partialSuffix names the volume a replacement is uploaded into first.
const partialSuffix = ".kubenode-partial"

// upload streams an output into a volume of upload_pool, with progress. An
// existing volume of that name is an error unless upload_overwrite is set.
// A replacement is uploaded into a temporary volume first and the old volume
// deleted only once that upload is complete; libvirt cannot rename a volume,
// so the output is then uploaded again under its name. A failed upload
// deletes the volume it was writing.
func upload(ctx context.Context, ui packersdk.Ui, c *Config, path string, out Output) error {
	name := c.uploadVolumeName(out)
	d, err := newDriver(c.UploadURI)
	if err != nil {
		return fmt.Errorf("upload_uri: %w", err)
	}
	defer d.Close()
	names, err := d.VolumeNames(c.UploadPool)
	if err != nil {
		return fmt.Errorf("upload_pool: %w", err)
	}
	if !slices.Contains(names, name) {
		ui.Say(fmt.Sprintf("Uploading %s into volume %s of pool %s (%s)", filepath.Base(path), name, c.UploadPool, c.UploadURI))
		return uploadInto(ctx, ui, d, c.UploadPool, name, path, out)
	}
	if !c.UploadOverwrite {
		return fmt.Errorf("upload_volume: %q already exists in pool %q; set upload_overwrite = true to replace it", name, c.UploadPool)
	}
	tmp := name + partialSuffix
	ui.Say(fmt.Sprintf("Uploading %s into volume %s of pool %s (%s); %s is replaced once it is complete", filepath.Base(path), tmp, c.UploadPool, c.UploadURI, name))
	// A failed earlier run may have left one.
	if err := d.DeleteVolume(c.UploadPool, tmp); err != nil {
		return err
	}
	if err := uploadInto(ctx, ui, d, c.UploadPool, tmp, path, out); err != nil {
		return fmt.Errorf("%w; volume %s is unchanged", err, name)
	}
	ui.Say(fmt.Sprintf("Replacing volume %s in pool %s", name, c.UploadPool))
	if err := d.DeleteVolume(c.UploadPool, name); err != nil {
		d.DeleteVolume(c.UploadPool, tmp)
		return fmt.Errorf("replacing volume %s: %w", name, err)
	}
	if err := uploadInto(ctx, ui, d, c.UploadPool, name, path, out); err != nil {
		return fmt.Errorf("%w; the new image is complete in volume %s of pool %s: use it, or run the export again", err, tmp, c.UploadPool)
	}
	return d.DeleteVolume(c.UploadPool, tmp)
}

// uploadInto creates volume name and writes the output into it; on failure
// it deletes the volume.
func uploadInto(ctx context.Context, ui packersdk.Ui, d libvirt.Driver, pool, name, path string, out Output) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := d.CreateVolume(pool, libvirt.Volume{Name: name, Format: out.Format, Capacity: uint64(out.Size)}); err != nil {
		return err
	}
	body := ui.TrackProgress(filepath.Base(path), 0, out.Size, f)
	defer body.Close()
	if err := d.UploadVolume(pool, name, ctxio.Reader{Ctx: ctx, R: body}, out.Size); err != nil {
		if derr := d.DeleteVolume(pool, name); derr != nil {
			err = errors.Join(err, fmt.Errorf("deleting the partial volume %s: %w", name, derr))
		}
		return fmt.Errorf("uploading %s into volume %s: %w", filepath.Base(path), name, err)
	}
	return nil
}

// uploadVolumeName is the volume upload_pool receives out as.
func (c *Config) uploadVolumeName(out Output) string {
	if c.UploadVolume != "" {
		return c.UploadVolume
	}
	return out.File
}
