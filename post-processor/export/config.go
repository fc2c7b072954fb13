// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:generate go tool packer-sdc mapstructure-to-hcl2 -type Config
//go:generate bash ../../scripts/struct-markdown.sh

package export

import (
	"crypto/x509"
	"fmt"
	"log"
	"os"
	"runtime"
	"strconv"

	"github.com/hashicorp/packer-plugin-sdk/common"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/template/config"
	"github.com/hashicorp/packer-plugin-sdk/template/interpolate"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
)

// Config is the configuration of the kubenode-export post-processor.
type Config struct {
	common.PackerConfig `mapstructure:",squash"`

	// Image formats to write: `qcow2` (default), `raw`, `vmdk`, `vhdx`, each
	// with qemu-img, and `containerdisk`: a KubeVirt containerDisk, an OCI
	// image (linux/amd64, FROM scratch) of one gzip layer holding
	// `disk/<output_name>.qcow2` owned by 107:107 (KubeVirt's qemu user),
	// mode 0440 in a 0555 `disk/`, written as the OCI layout archive
	// `<output_name>.containerdisk.tar`, which `ctr images import` reads. Its
	// disk is the `qcow2` output when that is written too, otherwise a qcow2
	// converted the same way (`compression` applies).
	Formats []string `mapstructure:"formats"`
	// Compression of qcow2 outputs: `zstd` (default; multi-threaded),
	// `zlib` (readable by older QEMU), or `none`.
	Compression string `mapstructure:"compression"`
	// Where outputs go. Default: the builder's output directory.
	OutputDir string `mapstructure:"output_directory"`
	// File name of the outputs without extension. Default: the builder's
	// image name (`vm_name`).
	OutputName string `mapstructure:"output_name"`
	// qemu-img coroutines for the conversion (`-m`, at most 16). Default:
	// the number of CPUs.
	Threads int `mapstructure:"threads"`
	// The qemu-img binary. Default `qemu-img` on PATH.
	QemuImgPath string `mapstructure:"qemu_img_path"`
	// Upload the first output into this libvirt storage pool: the first
	// disk format listed (not a containerdisk).
	UploadPool string `mapstructure:"upload_pool"`
	// libvirt URI of the pool's host: local or remote, e.g.
	// `qemu+ssh://user@host/system`. Default `qemu:///system`.
	UploadURI string `mapstructure:"upload_uri"`
	// Name of the uploaded volume. Default: the output's file name.
	UploadVolume string `mapstructure:"upload_volume"`
	// Replace a volume of that name. By default an existing one is an error.
	// The replacement is uploaded into `<name>.kubenode-partial` first, and
	// the old volume is deleted only once that upload is complete; libvirt
	// cannot rename volumes, so the image is then uploaded again under its
	// name (twice the transfer). A failed upload leaves the old volume.
	UploadOverwrite bool `mapstructure:"upload_overwrite"`
	// Permissions of the image files, in octal. Default `0600`: an image
	// holds the build account's password hash and keys, so only its owner
	// reads it. `0640` or `0644` share it; the `.sha256` files and the
	// manifest hold no secrets and are always `0644`.
	FileMode string `mapstructure:"file_mode"`
	// Also push the containerdisk image into this repository, e.g.
	// `registry.example.com/nodes/debian-12` (no tag or digest: see
	// `containerdisk_tag`), with the credentials of the docker config
	// (`~/.docker/config.json`, `$DOCKER_CONFIG`; `docker login` writes
	// it). The archive names the image `<repository>:<tag>`; without a
	// repository it names it `localhost/kubenode/<output_name>:<tag>` and
	// nothing is pushed.
	ContainerDiskRepository string `mapstructure:"containerdisk_repository"`
	// Tag of the containerdisk image. Default: a tag that names this image
	// only, the Kubernetes release kubenode-bake baked and the first 12
	// hex digits of the image's digest, e.g. `v1.37.2-3f2a9c01be47` (the
	// digest's alone for an image not baked), never `latest`: Cluster
	// API's machine templates are immutable, and a tag moved to another
	// image changes what they boot. The manifest records the image's
	// digest too.
	ContainerDiskTag string `mapstructure:"containerdisk_tag"`
	// Registries, as `host` or `host:port`, that the push may reach over
	// plain HTTP when they do not answer HTTPS. A loopback registry
	// (`localhost`, `127.0.0.1`, `[::1]`) needs no listing; any other is
	// reached over verified HTTPS only, private addresses included. Over
	// plain HTTP the push sends no credentials, and anyone on the way can
	// read and change the image.
	ContainerDiskPlainHTTPHosts []string `mapstructure:"containerdisk_plain_http_hosts"`
	// PEM file of the CA certificates that sign the registry's
	// certificate, for a registry with a private CA; trusted besides the
	// system's roots.
	ContainerDiskCAFile string `mapstructure:"containerdisk_ca_file"`
	// Removed: it allowed plain HTTP and unverified TLS at once, with the
	// docker config's credentials. Setting it to `true` is an error: use
	// `containerdisk_plain_http_hosts` for a registry without TLS, and
	// `containerdisk_ca_file` for one with a private CA.
	ContainerDiskInsecure bool `mapstructure:"containerdisk_insecure"`
	// Export a `.qcow2` input that has a backing file, which qemu-img then
	// reads into the outputs. Default `false`: the input is refused,
	// since the backing file it names may be any file of this machine.
	// kubenode-libvirt's image never has one.
	AllowBackingFile bool `mapstructure:"allow_backing_file"`
	// Export a `.qcow2` input whose data lives in an external data file,
	// which qemu-img then reads into the outputs. Default `false`: the
	// input is refused, since the file it names may be any file of this
	// machine.
	AllowExternalDataFile bool `mapstructure:"allow_external_data_file"`
	// Write into an output directory that every user can write to (mode
	// `o+w`, sticky or not, like `/tmp`). Default `false`: such a
	// directory is refused, since another user could replace the outputs
	// between the export and their use.
	AllowSharedOutputDirectory bool `mapstructure:"allow_shared_output_directory"`

	ctx interpolate.Context
	// fileMode is FileMode parsed.
	fileMode os.FileMode
	// warnings are what Prepare found risky but allowed; PostProcess
	// prints them.
	warnings []string
	// caPool is the system's roots and containerdisk_ca_file's
	// certificates; nil without that key.
	caPool *x509.CertPool
}

// Formats qemu-img writes for us, with their file extensions.
var formatExt = map[string]string{"qcow2": "qcow2", "raw": "raw", "vmdk": "vmdk", "vhdx": "vhdx"}

// formatContainerDisk is the KubeVirt containerDisk: not a qemu-img format
// but an OCI archive holding a qcow2.
const formatContainerDisk = "containerdisk"

// Prepare decodes raws into c, sets defaults and reports every problem.
func (c *Config) Prepare(raws ...interface{}) error {
	if err := config.Decode(c, &config.DecodeOpts{
		PluginType: "kubenode.export", Interpolate: true, InterpolateContext: &c.ctx,
	}, raws...); err != nil {
		return err
	}
	c.warnings = nil
	var errs *packersdk.MultiError
	add := func(key, format string, args ...any) {
		errs = packersdk.MultiErrorAppend(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if len(c.Formats) == 0 {
		c.Formats = []string{"qcow2"}
	}
	seen := map[string]bool{}
	for i, f := range c.Formats {
		if _, ok := formatExt[f]; !ok && f != formatContainerDisk {
			add(fmt.Sprintf("formats[%d]", i), "%q is not a format this writes; use \"qcow2\", \"raw\", \"vmdk\", \"vhdx\" or \"containerdisk\"", f)
		}
		if seen[f] {
			add(fmt.Sprintf("formats[%d]", i), "%q is listed twice", f)
		}
		seen[f] = true
	}
	if c.Compression == "" {
		c.Compression = "zstd"
	}
	if c.Compression != "zstd" && c.Compression != "zlib" && c.Compression != "none" {
		add("compression", "%q is not allowed; use \"zstd\", \"zlib\" or \"none\"", c.Compression)
	}
	if c.Threads == 0 {
		c.Threads = min(runtime.NumCPU(), 16)
	}
	if c.Threads < 1 || c.Threads > 16 {
		add("threads", "%d is out of range: qemu-img takes 1 to 16", c.Threads)
	}
	if c.UploadURI == "" {
		c.UploadURI = "qemu:///system"
	}
	if w := libvirt.TCPURIWarning("upload_uri", c.UploadURI, "the uploaded image and the password hash and keys it holds"); w != "" {
		c.warnings = append(c.warnings, w)
	}
	if c.UploadPool == "" && (c.UploadVolume != "" || c.UploadOverwrite) {
		add("upload_pool", "is required with upload_volume and upload_overwrite")
	}
	if c.UploadPool != "" && len(c.diskFormats()) == 0 {
		add("upload_pool", "uploads a disk image, and formats lists none: add \"qcow2\" to formats (a containerdisk goes to a registry with containerdisk_repository)")
	}
	c.prepareContainerDisk(seen[formatContainerDisk], add)
	if c.FileMode == "" {
		c.FileMode = "0600"
	}
	if m, err := strconv.ParseUint(c.FileMode, 8, 32); err != nil || m > 0o777 || m&0o400 == 0 {
		add("file_mode", "%q is not allowed; use octal permissions from 0400 to 0777 that let the owner read the image, e.g. \"0600\" (the default) or \"0640\"", c.FileMode)
	} else {
		c.fileMode = os.FileMode(m)
	}
	if c.QemuImgPath == "" {
		c.QemuImgPath = "qemu-img"
	}
	if errs != nil && len(errs.Errors) > 0 {
		return errs
	}
	for _, w := range c.warnings {
		log.Printf("kubenode-export: warning: %s", w)
	}
	return nil
}
