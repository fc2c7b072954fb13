// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	"github.com/hashicorp/packer-plugin-sdk/multistep/commonsteps"
)

// State-bag keys of the files the build reads from this machine besides
// the install ISO (the keys of the extra CD-ROMs are extraCDROMKey(i)).
const (
	stateBaseDisk     = "base_disk"      // string: local path of the base disk (disk_image, or iso_url with disk_image = true)
	stateVirtioWinISO = "virtio_win_iso" // string: local path of virtio_win_iso
)

func extraCDROMKey(i int) string { return fmt.Sprintf("extra_cdrom_%d", i) }

// sourceFile is a file the build reads from this machine: a local path
// without a checksum is used as it is; a URL, or a path with a checksum,
// goes through the SDK's StepDownload (go-getter, Packer's cache,
// checksum check) as iso_url does, which puts the local path under
// stateKey.
type sourceFile struct {
	key         string // HCL key of the location, e.g. "extra_cdroms[1]"
	checksumKey string // HCL key of its checksum
	description string // for StepDownload's messages
	location    string
	checksum    string
	extension   string // of the file in Packer's cache
	stateKey    string
}

// download says whether the file goes through StepDownload.
func (f sourceFile) download() bool { return f.checksum != "" || isURL(f.location) }

func (f sourceFile) step() *commonsteps.StepDownload {
	return &commonsteps.StepDownload{
		Checksum:    f.checksum,
		Description: f.description,
		Extension:   f.extension,
		ResultKey:   f.stateKey,
		Url:         []string{f.location},
	}
}

// path is the file's local path once the download steps have run.
func (f sourceFile) path(state multistep.StateBag) string {
	if p, ok := state.GetOk(f.stateKey); ok {
		return p.(string)
	}
	return f.location
}

// isURL tells a URL (https://..., file:///..., s3::https://...) from a
// local path. A one-letter scheme is a Windows drive letter.
func isURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && len(u.Scheme) > 1
}

// sourceKind is what the build starts from. Prepare decides it once, from
// disk_image; the steps branch on it.
type sourceKind int

const (
	// sourceInstallISO: an install from iso_url onto an empty disk.
	sourceInstallISO sourceKind = iota
	// sourceDiskImage: disk_image, a local path or a URL, is the base disk.
	sourceDiskImage
	// sourceISOURLDisk: disk_image = true, iso_url is the base disk, as in
	// the qemu builder.
	sourceISOURLDisk
)

// sourceKindOf reads disk_image: unset or false installs from iso_url,
// true boots iso_url as the disk (HCL turns the bool into "true"), and
// anything else is the base disk's path or URL.
func sourceKindOf(diskImage string) sourceKind {
	switch {
	case diskImage == "" || strings.EqualFold(diskImage, "false"):
		return sourceInstallISO
	case strings.EqualFold(diskImage, "true"):
		return sourceISOURLDisk
	}
	return sourceDiskImage
}

// sourceFiles lists disk_image (a path or URL), virtio_win_iso and
// extra_cdroms, in the order the build attaches them.
func (c *Config) sourceFiles() []sourceFile {
	var out []sourceFile
	if c.source == sourceDiskImage {
		out = append(out, sourceFile{
			key: "disk_image", checksumKey: "disk_image_checksum", description: "disk image",
			location: c.DiskImage, checksum: c.DiskImageChecksum, extension: cacheExtension(c.DiskImage, "img"),
			stateKey: stateBaseDisk,
		})
	}
	if c.VirtioWinISO != "" {
		out = append(out, sourceFile{
			key: "virtio_win_iso", checksumKey: "virtio_win_iso_checksum", description: "virtio-win ISO",
			location: c.VirtioWinISO, checksum: c.VirtioWinISOChecksum, extension: "iso",
			stateKey: stateVirtioWinISO,
		})
	}
	for i, cd := range c.ExtraCDROMs {
		f := sourceFile{
			key: fmt.Sprintf("extra_cdroms[%d]", i), checksumKey: fmt.Sprintf("extra_cdroms_checksums[%d]", i),
			description: fmt.Sprintf("extra CD-ROM %d", i), location: cd, extension: "iso", stateKey: extraCDROMKey(i),
		}
		if i < len(c.ExtraCDROMsChecksums) {
			f.checksum = c.ExtraCDROMsChecksums[i]
		}
		out = append(out, f)
	}
	return out
}

var extensionRE = regexp.MustCompile(`^[a-z0-9]{1,8}$`)

// cacheExtension keeps the URL's file extension (qcow2, img, raw) for the
// file in Packer's cache.
func cacheExtension(location, fallback string) string {
	p := location
	if u, err := url.Parse(location); err == nil && u.Path != "" {
		p = u.Path
	}
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(p), "."))
	if extensionRE.MatchString(ext) {
		return ext
	}
	return fallback
}

// checkSourceFiles reports a URL without a checksum (Packer's convention:
// "none" says no checksum on purpose) and checksums the SDK cannot read,
// each under its key. A `file:` checksum is fetched now, as iso_checksum's.
func (c *Config) checkSourceFiles() []error {
	var errs []error
	if n, m := len(c.ExtraCDROMsChecksums), len(c.ExtraCDROMs); n > 0 && n != m {
		errs = append(errs, fmt.Errorf("extra_cdroms_checksums: has %d entries for %d extra_cdroms: give one per CD-ROM, in the same order (\"none\" for one not to check, \"\" for a local file used as it is)", n, m))
	}
	for _, f := range c.sourceFiles() {
		switch {
		case f.location == "":
			errs = append(errs, fmt.Errorf("%s: is empty; give a local path or a URL", f.key))
		case isURL(f.location) && f.checksum == "":
			errs = append(errs, fmt.Errorf("%s: %q is a URL and needs a checksum: set %s to \"sha256:<hex>\", \"file:<URL of a checksum file>\" or \"none\"", f.key, f.location, f.checksumKey))
		case f.checksum != "" && f.checksum != "none":
			// The SDK's ISOConfig reads checksums as iso_checksum does.
			iso := commonsteps.ISOConfig{RawSingleISOUrl: f.location, ISOChecksum: f.checksum}
			_, isoErrs := iso.Prepare(nil)
			for _, e := range isoErrs {
				errs = append(errs, fmt.Errorf("%s: %v", f.checksumKey, e))
			}
		}
	}
	return errs
}

// The qcow2 header fields read (QEMU's docs/interop/qcow2.txt): a version
// 2 header is 72 bytes, a version 3 header at least 104.
const (
	qcow2Magic           = "QFI\xfb"
	qcow2V2HeaderSize    = 72
	qcow2V3HeaderSize    = 104
	qcow2ExternalDataBit = 1 << 2 // of incompatible_features, version 3
)

// diskVirtualSize returns the size of the disk a guest sees in a disk
// image: a qcow2 image's size field, or a raw image's length.
//
// A qcow2 header is also checked, because the image goes to libvirt as the
// build disk's backing store or through qemu-img: QEMU opens the files a
// header names. An image naming a backing file or an external data file
// (any path on the hypervisor: another VM's disk, a key) would put that
// file's contents into the guest and the built image, so it is refused.
func diskVirtualSize(file string) (uint64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	head := make([]byte, qcow2V3HeaderSize)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	if n >= 4 && string(head[:4]) == qcow2Magic {
		return qcow2VirtualSize(head[:n])
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return uint64(st.Size()), nil
}

// qcow2VirtualSize reads the size from a qcow2 header (head: its first
// bytes, up to qcow2V3HeaderSize) after checking that the image names no
// other file.
func qcow2VirtualSize(head []byte) (uint64, error) {
	if len(head) < 8 {
		return 0, errors.New("a qcow2 header cut short")
	}
	version := binary.BigEndian.Uint32(head[4:])
	need := map[uint32]int{2: qcow2V2HeaderSize, 3: qcow2V3HeaderSize}[version]
	switch {
	case need == 0:
		return 0, fmt.Errorf("qcow2 version %d is not supported (QEMU writes 2 and 3); convert the image with `qemu-img convert -O qcow2`", version)
	case len(head) < need:
		return 0, errors.New("a qcow2 header cut short")
	}
	if off, size := binary.BigEndian.Uint64(head[8:]), binary.BigEndian.Uint32(head[16:]); off != 0 || size != 0 {
		return 0, errors.New("the qcow2 image names a backing file, which QEMU would open on the hypervisor and show to the guest; " +
			"give a standalone image: `qemu-img convert -O qcow2 <image> <standalone.qcow2>` flattens it")
	}
	if version == 3 && binary.BigEndian.Uint64(head[72:])&qcow2ExternalDataBit != 0 {
		return 0, errors.New("the qcow2 image keeps its data in an external data file, which QEMU would open on the hypervisor and show to the guest; " +
			"give a standalone image: `qemu-img convert -O qcow2 <image> <standalone.qcow2>` copies the data into it")
	}
	return binary.BigEndian.Uint64(head[24:]), nil
}

// baseDiskKey is the HCL key of the base disk: iso_url with disk_image =
// true, else disk_image.
func (c *Config) baseDiskKey() string {
	if c.source == sourceISOURLDisk {
		return "iso_url"
	}
	return "disk_image"
}

// diskSizeForBase checks disk_size against the base disk's virtual size.
// A disk_size left at its default grows to the base's size (rounded up to
// a MiB, then held to disk_size's limit: a size near 2^64 must not wrap
// around to a small one); one the template set must be at least the
// base's size.
func (c *Config) diskSizeForBase(base uint64) (uint64, error) {
	size := c.diskSize
	if base <= size {
		return size, nil
	}
	grown := (base + 1<<20 - 1) &^ (1<<20 - 1)
	if grown < base || grown > maxDiskSize {
		return 0, fmt.Errorf("%s: its virtual size, %s, is larger than the largest disk allowed, 64T: is it a disk image? Shrink it, or give another",
			c.baseDiskKey(), formatSize(base))
	}
	if c.diskSizeDefaulted {
		return grown, nil
	}
	return 0, fmt.Errorf("disk_size: %s is smaller than %s's virtual size, %s: a disk cannot shrink; set disk_size to at least %s, or leave it unset",
		c.DiskSize, c.baseDiskKey(), formatSize(base), minDiskSize(base))
}

// formatSize writes a byte count as disk_size does when it is exact
// ("20G"), else in bytes with the GiB beside it.
func formatSize(n uint64) string {
	for _, u := range []struct {
		shift  uint
		suffix string
	}{{40, "T"}, {30, "G"}, {20, "M"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.suffix)
		}
	}
	return fmt.Sprintf("%d bytes (%.2fG)", n, float64(n)/(1<<30))
}

// minDiskSize is the smallest disk_size (whole G, at least 1G) that holds
// n bytes.
func minDiskSize(n uint64) string {
	g := (n + 1<<30 - 1) >> 30
	if g == 0 {
		g = 1
	}
	return fmt.Sprintf("%dG", g)
}

// localBaseDiskSize is the virtual size of a disk_image that is a local
// file readable now; false for a URL, for iso_url with disk_image = true,
// or for a file this machine cannot open (the build reports it). An image
// that opens but is refused (a qcow2 naming another file) is an error now.
func (c *Config) localBaseDiskSize() (uint64, bool, error) {
	if c.source != sourceDiskImage || isURL(c.DiskImage) {
		return 0, false, nil
	}
	if _, err := os.Stat(c.DiskImage); err != nil {
		return 0, false, nil
	}
	size, err := diskVirtualSize(c.DiskImage)
	if err != nil {
		return 0, false, fmt.Errorf("disk_image: %s: %w", c.DiskImage, err)
	}
	return size, true, nil
}
