// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// qcow2Magic starts a qcow2 image.
const qcow2Magic = "QFI\xfb"

// inputFormat is the format of the input's disk image, from its file name
// (diskImage accepts no other): kubenode-libvirt's artifact is the
// flattened qcow2 it wrote, <vm_name>.qcow2; another builder's .raw or .img
// is raw. Never from the file's first bytes: a raw disk's are whatever the
// guest wrote, and a qcow2 header there could name any host file as its
// backing file.
func inputFormat(src string) string {
	if strings.EqualFold(filepath.Ext(src), ".qcow2") {
		return "qcow2"
	}
	return "raw"
}

// checkInput refuses an input qemu-img would make read files other than
// itself: a raw disk that starts with a qcow2 header (a guest can write
// one, and anything reading the disk as qcow2 would follow it), and a
// qcow2 with a backing file or an external data file, unless
// allow_backing_file or allow_external_data_file accepts them.
func checkInput(ctx context.Context, c *Config, src, format string) error {
	if format == "raw" {
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		magic := make([]byte, len(qcow2Magic))
		if _, err := io.ReadFull(f, magic); err == nil && string(magic) == qcow2Magic {
			return fmt.Errorf("%s is named as a raw disk but starts with a qcow2 header: a guest can write such a header into a raw disk, "+
				"naming any file of this machine as its backing or data file, and refusing it keeps qemu-img from reading them into the export; "+
				"if the file is a qcow2 image you trust, name it .qcow2", src)
		}
		return nil
	}
	cmd := exec.CommandContext(ctx, c.QemuImgPath, "info", "--output=json", "-f", "qcow2", src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s info %s: %w: %s", c.QemuImgPath, src, err, strings.TrimSpace(stderr.String()))
	}
	var info struct {
		BackingFilename string `json:"backing-filename"`
		FormatSpecific  struct {
			Data struct {
				DataFile string `json:"data-file"`
			} `json:"data"`
		} `json:"format-specific"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return fmt.Errorf("%s info %s: %w", c.QemuImgPath, src, err)
	}
	if b := info.BackingFilename; b != "" && !c.AllowBackingFile {
		return fmt.Errorf("%s has a backing file %s, which qemu-img would read into the export: "+
			"flatten the image (qemu-img convert), or set allow_backing_file = true if that file is meant to be part of it", src, b)
	}
	if d := info.FormatSpecific.Data.DataFile; d != "" && !c.AllowExternalDataFile {
		return fmt.Errorf("%s has an external data file %s, which qemu-img would read into the export: "+
			"convert the image into one without it, or set allow_external_data_file = true if that file is meant to be part of it", src, d)
	}
	return nil
}
