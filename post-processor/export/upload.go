package export

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
	"github.com/kubenode/packer-plugin-kubenode/internal/ctxio"
)

// newDriver connects to libvirt; tests may replace it.
var newDriver = libvirt.NewDriver

// upload streams an output into a volume of upload_pool, with progress. An
// existing volume of that name is an error unless upload_overwrite is set;
// a failed upload deletes the partial volume.
func upload(ctx context.Context, ui packersdk.Ui, c *Config, path string, out Output) error {
	name := c.UploadVolume
	if name == "" {
		name = out.File
	}
	d, err := newDriver(c.UploadURI)
	if err != nil {
		return fmt.Errorf("upload_uri: %w", err)
	}
	defer d.Close()
	names, err := d.VolumeNames(c.UploadPool)
	if err != nil {
		return fmt.Errorf("upload_pool: %w", err)
	}
	for _, n := range names {
		if n != name {
			continue
		}
		if !c.UploadOverwrite {
			return fmt.Errorf("upload_volume: %q already exists in pool %q; set upload_overwrite = true to replace it", name, c.UploadPool)
		}
		ui.Say(fmt.Sprintf("Replacing volume %s in pool %s", name, c.UploadPool))
		if err := d.DeleteVolume(c.UploadPool, name); err != nil {
			return err
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	ui.Say(fmt.Sprintf("Uploading %s into volume %s of pool %s (%s)", filepath.Base(path), name, c.UploadPool, c.UploadURI))
	if _, err := d.CreateVolume(c.UploadPool, libvirt.Volume{Name: name, Format: out.Format, Capacity: uint64(out.Size)}); err != nil {
		return err
	}
	body := ui.TrackProgress(filepath.Base(path), 0, out.Size, f)
	defer body.Close()
	if err := d.UploadVolume(c.UploadPool, name, ctxio.Reader{Ctx: ctx, R: body}, out.Size); err != nil {
		d.DeleteVolume(c.UploadPool, name)
		return fmt.Errorf("uploading %s: %w", filepath.Base(path), err)
	}
	return nil
}
