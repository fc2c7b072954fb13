// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:generate go tool packer-sdc mapstructure-to-hcl2 -type Config,WindowsSeedConfig,LinuxSeedConfig,DomainXMLPatch
//go:generate bash ../../scripts/struct-markdown.sh

package libvirt

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/bootcommand"
	"github.com/hashicorp/packer-plugin-sdk/common"
	"github.com/hashicorp/packer-plugin-sdk/communicator"
	"github.com/hashicorp/packer-plugin-sdk/multistep/commonsteps"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/shutdowncommand"
	"github.com/hashicorp/packer-plugin-sdk/template/config"
	"github.com/hashicorp/packer-plugin-sdk/template/interpolate"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// BuilderID identifies this builder's artifacts.
const BuilderID = "kubenode.libvirt"

// Config is the configuration of the kubenode-libvirt builder.
type Config struct {
	common.PackerConfig            `mapstructure:",squash"`
	commonsteps.HTTPConfig         `mapstructure:",squash"`
	commonsteps.ISOConfig          `mapstructure:",squash"`
	bootcommand.BootConfig         `mapstructure:",squash"`
	shutdowncommand.ShutdownConfig `mapstructure:",squash"`
	Comm                           communicator.Config `mapstructure:",squash"`

	// The libvirt connection URI. `qemu:///system` (default) is the local
	// system daemon; `qemu+ssh://user@host/system` reaches a remote
	// hypervisor, which then runs the VM. Guest ports are forwarded on the
	// hypervisor's 127.0.0.1, so remote builds over user-mode networking
	// also need an SSH tunnel or `network`. `qemu+tcp://host/system` works
	// but is not recommended, and Prepare warns about it: the plugin's libvirt
	// client has no SASL, so the daemon must accept unauthenticated TCP
	// connections (`auth_tcp = "none"`: anyone who reaches the port controls
	// the hypervisor), and everything, including the seed disc with the
	// build password, crosses the network unencrypted.
	LibvirtURI string `mapstructure:"libvirt_uri"`
	// A base disk (qcow2 or raw) to start from instead of installing from
	// `iso_url`, e.g. a cloud image: a local path, or a URL (what `iso_url`
	// takes: https://, file://, s3::, ...), downloaded into Packer's cache
	// and checked against `disk_image_checksum`. Either `iso_url` or
	// `disk_image` is required. As in the qemu builder, `disk_image = true`
	// with `iso_url` and `iso_checksum` boots `iso_url` as the disk image
	// (in HCL the bool arrives as the string "true"; `false` is the same as
	// unset). `disk_size` grows the disk; it cannot be smaller than the
	// image's virtual size. A qcow2 image that names a backing file or an
	// external data file is refused: QEMU would open that file on the
	// hypervisor and show it to the guest (`qemu-img convert -O qcow2`
	// makes a standalone copy).
	DiskImage string `mapstructure:"disk_image"`
	// The checksum of a `disk_image` path or URL, in `iso_checksum`'s
	// forms: `sha256:<hex>` (or md5, sha1, sha512), `file:<URL or path of
	// a checksum file>`, or `none`. Required for a URL; a local path
	// without one is used as it is.
	DiskImageChecksum string `mapstructure:"disk_image_checksum"`
	// Use `disk_image` as the qcow2 backing file of the build disk (a linked
	// clone: fast, no copy) instead of copying it. The exported image is
	// always a full, flattened qcow2. Default true.
	UseBackingFile *bool `mapstructure:"use_backing_file"`
	// Path of the virtio-win driver ISO, attached as a CD-ROM for Windows
	// (Setup loads the storage and network drivers from it). Required with
	// a `windows` block unless `disk_bus = "sata"` and `nic_model` is
	// `e1000e` or `e1000`, which Windows drives without it: without the
	// drivers Setup finds no disk, or the guest no network, and the build
	// would only end at `winrm_timeout`. A local path, or a URL
	// downloaded into Packer's cache, which needs
	// `virtio_win_iso_checksum`.
	VirtioWinISO string `mapstructure:"virtio_win_iso"`
	// The checksum of `virtio_win_iso`, in `iso_checksum`'s forms
	// (`sha256:<hex>`, `file:<checksum file>`, `none`). Required for a
	// URL; a local path without one is used as it is.
	VirtioWinISOChecksum string `mapstructure:"virtio_win_iso_checksum"`
	// More ISO files to attach as CD-ROMs, in order: local paths, or URLs
	// downloaded into Packer's cache (each URL needs its checksum in
	// `extra_cdroms_checksums`).
	ExtraCDROMs []string `mapstructure:"extra_cdroms"`
	// Checksums of `extra_cdroms`, one per entry in the same order, in
	// `iso_checksum`'s forms; `none` skips the check of a URL, and `""`
	// leaves a local path as it is.
	ExtraCDROMsChecksums []string `mapstructure:"extra_cdroms_checksums"`

	// Render a Windows answer file and first-logon bootstrap onto a seed
	// CD-ROM. Set at most one of `windows`, `linux` and `seed_files`.
	Windows *WindowsSeedConfig `mapstructure:"windows"`
	// Render a Linux seed (autoinstall, cloud-init, preseed or kickstart)
	// onto a seed CD-ROM.
	Linux *LinuxSeedConfig `mapstructure:"linux"`
	// Your own seed files instead: a map from the name on the disc to a local
	// file path. Requires `seed_label`.
	SeedFiles map[string]string `mapstructure:"seed_files"`
	// The volume label of a `seed_files` disc, e.g. `cidata` or `OEMDRV`.
	SeedLabel string `mapstructure:"seed_label"`
	// If set, the rendered seed files are also written to this directory for
	// inspection.
	SeedDirectory string `mapstructure:"seed_directory"`

	// Name of the VM and of the exported disk file. Default `packer-<build name>`.
	VMName string `mapstructure:"vm_name"`
	// Directory the artifact is written to. Default `output-<build name>`.
	// Must not exist unless `-force` is given.
	OutputDir string `mapstructure:"output_directory"`
	// Virtual CPUs. Default 2, or `sockets` × `cores` × `threads` when
	// any of those is set.
	CPUs int `mapstructure:"cpus"`
	// CPU sockets of the guest. When any of `sockets`, `cores` and
	// `threads` is set, the unset ones are 1 and their product must equal
	// `cpus` (or gives `cpus` when it is unset). Unset, libvirt chooses the
	// topology. Windows client editions use at most 2 sockets: give them
	// cores instead.
	Sockets int `mapstructure:"sockets"`
	// Cores per socket.
	Cores int `mapstructure:"cores"`
	// Threads per core.
	Threads int `mapstructure:"threads"`
	// The guest's CPU: `host-passthrough` (the host's own CPU; KVM only),
	// `host-model`, `maximum` (every feature the accelerator can offer,
	// QEMU's `-cpu max`; libvirt 7.1 or later), or a QEMU CPU model such as
	// `Nehalem` or `Skylake-Client-v4`, optionally followed by features to
	// require or disable, `Nehalem,+aes,-vmx` (libvirt's feature names; the
	// models and features a hypervisor offers are listed by
	// `virsh domcapabilities --virttype qemu` for TCG, `--virttype kvm`).
	// A named model the hypervisor cannot provide fails the start.
	// Default: `host-passthrough` under KVM, `Nehalem` under TCG. QEMU's
	// own default, qemu64, lacks the x86-64-v2 features (SSE4.2, POPCNT,
	// CX16, ...) that RHEL 9 and its rebuilds are built for, so their
	// installers and kernels stop with "CPU does not support x86-64-v2";
	// Nehalem has them. Guests built for x86-64-v3 (AVX2, e.g. RHEL 10)
	// need `maximum` under TCG (QEMU 7.2 or later emulates AVX2).
	CPUModel string `mapstructure:"cpu_model"`
	// Memory in MiB. Default 2048 (4096 for Windows).
	Memory int `mapstructure:"memory"`
	// Size of the build disk, e.g. `40G` or `20480M` (a plain number is
	// MiB), from 1G to 64T. Default 20G (60G for Windows). With `disk_image`
	// it must be at least the image's size.
	DiskSize string `mapstructure:"disk_size"`
	// Disk bus: `virtio` (virtio-blk, default), `scsi` (virtio-scsi) or `sata`.
	DiskBus string `mapstructure:"disk_bus"`
	// Network card model: `virtio` (default), `e1000e` or `e1000`.
	NICModel string `mapstructure:"nic_model"`
	// QEMU machine type. Default `q35`.
	MachineType string `mapstructure:"machine_type"`
	// `bios` or `uefi`. Default `uefi` for Windows, `bios` otherwise. With
	// `uefi` on a local hypervisor the VM's EFI variables are copied into
	// `output_directory` (`efivars.fd`), unless `keep_in_pool` is set;
	// reading them takes root on Debian and Ubuntu (`sudo packer build`),
	// and the build checks at its start that it can.
	Firmware string `mapstructure:"firmware"`
	// Boot UEFI with Secure Boot (needs `firmware = "uefi"`).
	SecureBoot bool `mapstructure:"secure_boot"`
	// Give the VM a TPM 2.0 (swtpm). On a local hypervisor its state is
	// copied into `output_directory` (`tpm/`) beside the image, unless
	// `keep_in_pool` is set; as for `firmware = "uefi"`, that takes root.
	TPM bool `mapstructure:"tpm"`
	// Hyper-V enlightenments for Windows guests (KVM only). Default true for
	// Windows on KVM. Set false when the host's KVM refuses them (often under
	// nested virtualization: the domain fails to start with QEMU's "kernel
	// doesn't allow setting HyperV VP_INDEX").
	HypervEnlightenments *bool `mapstructure:"hyperv_enlightenments"`
	// `kvm` or `tcg` (software emulation, slower but runs anywhere).
	// Default: `kvm` for a remote hypervisor, and for a local one when
	// /dev/kvm opens for reading and writing; else `tcg`, and the build
	// warns that it runs under TCG, with the reason /dev/kvm did not open
	// (usually: the build user is not in the `kvm` group). If a KVM guest
	// prints nothing and never reaches its communicator, try `tcg`.
	Accelerator string `mapstructure:"accelerator"`
	// How the guest is networked: `user` (default: QEMU user-mode networking,
	// the communicator port forwarded to 127.0.0.1; needs no bridge), or the
	// name of a libvirt network such as `default`.
	Network string `mapstructure:"network"`
	// Bridge device to attach to instead of a libvirt network, e.g. `br0`.
	Bridge string `mapstructure:"bridge"`
	// Lowest host port the communicator port may be forwarded from, with
	// `network = "user"`: a free port in `host_port_min`-`host_port_max` on
	// 127.0.0.1 is picked. Default 2222.
	HostPortMin int `mapstructure:"host_port_min"`
	// Highest host port the communicator port may be forwarded from.
	// Default 4444.
	HostPortMax int `mapstructure:"host_port_max"`
	// Address on the hypervisor the VM's VNC display listens on, e.g.
	// `127.0.0.1` (a free port from 5900 up is picked; the UI prints it).
	// Default empty: no VNC port at all. The display is still there, and
	// `virt-viewer -c <libvirt_uri> <vm_name>` shows it through libvirt's
	// own authenticated connection; `boot_command` does not need VNC either
	// (it is typed with libvirt's key events). A VNC port is reachable by
	// every account on the hypervisor and, on the loopback, by any guest on
	// QEMU user-mode networking (10.0.2.2 in a guest is the hypervisor's
	// 127.0.0.1), and a Windows build's console shows a logged-on
	// administrator: so it requires `vnc_password`.
	VNCBindAddress string `mapstructure:"vnc_bind_address"`
	// Password of the VNC display, 1 to 8 characters (VNC authentication
	// uses no more). Required with `vnc_bind_address`. VNC sends the
	// display unencrypted: over a network, tunnel it (`ssh -L`).
	VNCPassword string `mapstructure:"vnc_password"`
	// An existing libvirt storage pool to put the build's volumes in. By
	// default the builder creates its own directory pool under `pool_path`
	// and removes it at the end.
	StoragePool string `mapstructure:"storage_pool"`
	// Directory of the builder's own pool, on the hypervisor. Default
	// `/var/lib/libvirt/images/kubenode-<vm_name>-<random>`.
	PoolPath string `mapstructure:"pool_path"`
	// Keep the finished disk as a volume named `vm_name` in `storage_pool`
	// instead of downloading it into `output_directory`.
	KeepInPool bool `mapstructure:"keep_in_pool"`
	// How long libvirt may take to report the started VM as running. The
	// wait for the guest's OS is the communicator's (`ssh_timeout`,
	// `winrm_timeout`). Default 2m.
	BootTimeout time.Duration `mapstructure:"boot_timeout"`
	// Extra QEMU arguments, for what the builder does not model, in the
	// qemu builder's form: a list of lists, each a QEMU option and its
	// value, e.g. `[["-device", "virtio-serial-pci,bus=pcie.0,addr=0x11"],
	// ["-smbios", "type=1,serial=kubenode"]]`; as there, the strings after
	// the option are joined without a separator. They go into the domain's
	// `<qemu:commandline>` after the builder's own arguments (the user-mode
	// network). A PCI `-device` needs a slot of its own, as in the example
	// (`pci.0` on `pc` machines; libvirt fills low slots, so a high one is
	// normally free): without `addr=` QEMU takes the first free slot before
	// libvirt's devices are placed, and the start fails with "PCI: slot 1
	// function 0 not available" (Prepare warns). As in the qemu builder,
	// the strings may use `{{ .HTTPIP }}`, `{{ .HTTPPort }}`,
	// `{{ .HTTPDir }}`, `{{ .OutputDir }}` (absolute; a path on this
	// machine, so only meaningful for a local hypervisor), `{{ .Name }}`
	// and `{{ .SSHHostPort }}` (the forwarded communicator port on user
	// networking, SSH or WinRM; 0 otherwise). Unlike the qemu builder's,
	// they cannot replace an argument libvirt generates (change the domain
	// with `domain_xml_patch` instead), and the builder forwards the
	// communicator port itself: a `-netdev` with that `hostfwd` would bind
	// it twice. libvirt logs such a domain as tainted (custom-argv), which
	// is harmless.
	QemuArgs [][]string `mapstructure:"qemuargs"`
	// Edits of the generated domain XML, applied in order, for what no
	// option covers: see the `domain_xml_patch` block.
	DomainXMLPatches []DomainXMLPatch `mapstructure:"domain_xml_patch"`
	// Keep pressing the space bar from power-on for this long, e.g. `30s`,
	// to answer the "Press any key to boot from CD or DVD..." prompt that
	// Windows install media show under UEFI (and any install disc that
	// falls through to the disk when no key is pressed). The presses start
	// as soon as the VM runs, so the prompt is caught however long the
	// firmware takes, without tuning `boot_wait`; `boot_command` is typed
	// after the presses end and `boot_wait` (counted from power-on) has
	// passed. The space bar is used because firmware and boot loaders
	// ignore it where Esc would open OVMF's setup and Enter could pick a
	// menu entry. Default 0: no presses.
	BootPressAnyKey time.Duration `mapstructure:"boot_press_any_key"`

	ctx interpolate.Context
	// instanceID is linux.instance_id or one made for this build.
	instanceID string
	// source is what the build starts from, decided once by Prepare.
	source sourceKind
	// kvmUnavailable is why /dev/kvm did not open when Prepare chose tcg
	// because accelerator was unset; Run warns about it.
	kvmUnavailable error
	// diskSize is disk_size in bytes, parsed once by Prepare (and grown to
	// a local disk_image's virtual size when disk_size is unset).
	diskSize uint64
	// diskSizeDefaulted: disk_size was not set, so it may grow to the base
	// disk's size.
	diskSizeDefaulted bool
	// configSHA256 is the configuration's digest (confighash.Sum), for
	// the image's provenance.
	configSHA256 string
}

// WindowsSeedConfig renders the Windows seed (see autounattend.Windows).
type WindowsSeedConfig struct {
	// Windows Server release: `2019`, `2022` or `2025`.
	Version string `mapstructure:"version" required:"true"`
	// `standard` or `datacenter` (default). Before creating anything the
	// build reads the install disc's image list (`sources/install.wim` or
	// `install.esd`) and stops, listing the images, if the image this and
	// `experience` select is not on it.
	Edition string `mapstructure:"edition"`
	// `core` (default) or `desktop`.
	Experience string `mapstructure:"experience"`
	// Select the install.wim image by name instead (checked on the disc).
	ImageName string `mapstructure:"image_name"`
	// Select the install.wim image by index instead (evaluation ISOs: 1-4;
	// checked on the disc).
	ImageIndex int `mapstructure:"image_index"`
	// Disk Windows is installed to. Default 0.
	DiskID int `mapstructure:"disk_id"`
	// virtio-win driver folders loaded in Setup. Default viostor, vioscsi, NetKVM.
	VirtioDrivers []string `mapstructure:"virtio_drivers"`
	// Drive letters the virtio-win disc may have in Setup. Default D-I.
	VirtioDriveLetters []string `mapstructure:"virtio_drive_letters"`
	// Language of Setup and of the installed system, e.g. `en-US` (default).
	UILanguage string `mapstructure:"ui_language"`
	// Keyboard: a language tag like `de-DE` or a layout like
	// `0407:00000407`. Default: `ui_language`.
	InputLocale string `mapstructure:"input_locale"`
	// Language for non-Unicode programs. Default: `ui_language`.
	SystemLocale string `mapstructure:"system_locale"`
	// Formats of dates, times and numbers. Default: `ui_language`.
	UserLocale string `mapstructure:"user_locale"`
	// Windows time zone ID. Default `UTC`.
	TimeZone string `mapstructure:"timezone"`
	// Computer name, or `*` (default) for a random one.
	ComputerName string `mapstructure:"computer_name"`
	// Build account. Default: the communicator's `winrm_username` or
	// `ssh_username`, else `Administrator`.
	Username string `mapstructure:"username"`
	// Build account password. Default: the communicator's password.
	Password string `mapstructure:"password"`
	// `base64` (default) or `plaintext`.
	PasswordEncoding string `mapstructure:"password_encoding"`
	// Empty (evaluation media), `kms`, or a product key.
	ProductKey string `mapstructure:"product_key"`
	// Commands run at the first logon, before the communicator opens.
	FirstLogonCommands []string `mapstructure:"first_logon_commands"`
}

// LinuxSeedConfig renders a Linux seed (see autounattend.Linux).
type LinuxSeedConfig struct {
	// `ubuntu-autoinstall`, `cloud-init`, `preseed` or `kickstart`.
	Flavor string `mapstructure:"flavor" required:"true"`
	// Host name. Default `kubenode`.
	Hostname string `mapstructure:"hostname"`
	// Account to create. Default: the communicator's `ssh_username`.
	Username string `mapstructure:"username"`
	// Its password (hashed before it is written). Default: `ssh_password`.
	Password string `mapstructure:"password"`
	// An already crypted password instead.
	PasswordHash string `mapstructure:"password_hash"`
	// SSH public keys for the account. The builder adds the key of a
	// temporary key pair it generates when `ssh_private_key_file` is unset.
	SSHAuthorizedKeys []string `mapstructure:"ssh_authorized_keys"`
	// Extra packages. The installer flavors always add sshd; `cloud-init`
	// asks for these only (the image already answers SSH), so with none
	// listed its first boot runs no package manager.
	Packages []string `mapstructure:"packages"`
	// Target disk, e.g. `/dev/vda`. Default: the installer's choice. Not
	// for `cloud-init`.
	Disk string `mapstructure:"disk"`
	// `direct` (default) or `lvm`. Not for `cloud-init`.
	StorageLayout string `mapstructure:"storage_layout"`
	// System locale. Default `en_US.UTF-8`; with `cloud-init`, the image's
	// own unless set.
	Locale string `mapstructure:"locale"`
	// Keyboard layout. Default `us`; with `cloud-init`, the image's own
	// unless set.
	Keyboard string `mapstructure:"keyboard"`
	// Time zone, a tz database name like `Europe/Berlin`. Default `UTC`;
	// with `cloud-init`, the image's own unless set.
	Timezone string `mapstructure:"timezone"`
	// Shell commands run in order at the end of the install, inside the
	// installed system; one that fails fails the install. With `cloud-init`
	// they run at first boot, and one that fails does not stop the rest.
	LateCommands []string `mapstructure:"late_commands"`
	// HTTP proxy for the installer's package downloads,
	// `http://[user:password@]host:port/` (autoinstall's `proxy`, preseed's
	// `mirror/http/proxy`, cloud-init's apt proxy). Not for `kickstart`,
	// which installs from the DVD. The OS install only: kubenode-bake's
	// `http_proxy` covers the bake and containerd, and its `generalize`
	// removes this proxy from the apt configuration the installer copied
	// it into. A user or password in the URL is warned about.
	HTTPProxy string `mapstructure:"http_proxy"`
	// NoCloud instance-id. Default: a new one for every build, so that
	// cloud-init in an image made by an earlier build runs again (and
	// installs this build's key) instead of taking the boot for a reboot.
	InstanceID string `mapstructure:"instance_id"`
}

// placeholderSSHKey stands in for the temporary key while validating.
const placeholderSSHKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKubenodeTemporaryKeyPairPlaceholder0000 kubenode"

var diskSizeRE = regexp.MustCompile(`^([0-9]+)([MGT]?)$`)

// Prepare decodes raws into c, sets defaults and reports every problem.
func (c *Config) Prepare(raws ...interface{}) ([]string, error) {
	err := config.Decode(c, &config.DecodeOpts{
		PluginType:         BuilderID,
		Interpolate:        true,
		InterpolateContext: &c.ctx,
		InterpolateFilter:  &interpolate.RenderFilter{Exclude: []string{"boot_command", "qemuargs"}},
	}, raws...)
	if err != nil {
		return nil, err
	}
	var errs *packersdk.MultiError
	var warnings []string
	add := func(key, format string, args ...any) {
		errs = packersdk.MultiErrorAppend(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	windows := c.Windows != nil

	if c.LibvirtURI == "" {
		c.LibvirtURI = "qemu:///system"
	}
	if u, err := url.Parse(c.LibvirtURI); err != nil || u.Scheme == "" {
		add("libvirt_uri", "%q is not a libvirt URI like qemu:///system or qemu+ssh://user@host/system", c.LibvirtURI)
	} else if !strings.HasPrefix(u.Scheme, "qemu") {
		add("libvirt_uri", "%q: only the QEMU driver (qemu://, qemu+ssh://, qemu+tcp://, qemu+tls://) is supported", c.LibvirtURI)
	} else if w := TCPURIWarning("libvirt_uri", c.LibvirtURI, "the seed disc with the build password, the base disk and the image"); w != "" {
		warnings = append(warnings, w)
	}

	// Sources: an install ISO or a base disk (a path, a URL, or iso_url
	// itself with disk_image = true).
	c.source = sourceKindOf(c.DiskImage)
	if c.source == sourceInstallISO {
		c.DiskImage = "" // "false" is the same as unset
	}
	if c.source == sourceISOURLDisk && c.TargetExtension == "" {
		c.TargetExtension = "img" // the name of the file in Packer's cache
	}
	if c.source != sourceDiskImage {
		warns, isoErrs := c.ISOConfig.Prepare(&c.ctx)
		warnings = append(warnings, warns...)
		for _, e := range isoErrs {
			errs = packersdk.MultiErrorAppend(errs, e)
		}
		if c.DiskImageChecksum != "" {
			add("disk_image_checksum", "checks a disk_image path or URL; without one (or with disk_image = true) iso_checksum checks iso_url")
		}
	} else if len(c.ISOUrls) > 0 || c.RawSingleISOUrl != "" {
		add("disk_image", "set iso_url or disk_image, not both; disk_image = true boots iso_url as the disk image, as in the qemu builder")
	}
	errs = packersdk.MultiErrorAppend(errs, c.checkSourceFiles()...)
	if c.UseBackingFile == nil {
		t := true
		c.UseBackingFile = &t
	}

	// Seed.
	seeds := 0
	for _, set := range []bool{c.Windows != nil, c.Linux != nil, len(c.SeedFiles) > 0} {
		if set {
			seeds++
		}
	}
	if seeds > 1 {
		add("windows", "set at most one of windows, linux and seed_files")
	}
	if len(c.SeedFiles) > 0 && c.SeedLabel == "" {
		add("seed_label", "is required with seed_files (e.g. \"cidata\" for cloud-init)")
	}

	// VM.
	if c.VMName == "" {
		c.VMName = "packer-" + c.PackerBuildName
	}
	if !regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`).MatchString(c.VMName) {
		add("vm_name", "%q may only contain letters, digits, '.', '_' and '-'", c.VMName)
	}
	if c.OutputDir == "" {
		c.OutputDir = "output-" + c.PackerBuildName
	}
	c.prepareCPUTopology(add)
	if c.CPUs == 0 {
		c.CPUs = 2
	}
	if c.CPUs < 0 {
		add("cpus", "must be 1 or more")
	}
	if c.Memory == 0 {
		c.Memory = 2048
		if windows {
			c.Memory = 4096
		}
	}
	if c.Memory < 128 {
		add("memory", "%d MiB is too little; give at least 128", c.Memory)
	}
	if c.DiskSize == "" {
		c.diskSizeDefaulted = true
		c.DiskSize = "20G"
		if windows {
			c.DiskSize = "60G"
		}
	}
	if size, err := parseDiskSize(c.DiskSize); err != nil {
		add("disk_size", "%v", err)
	} else {
		c.diskSize = size
		// Known now for a local disk_image; a downloaded one is checked
		// at build time, before the VM is defined.
		base, ok, err := c.localBaseDiskSize()
		if ok && err == nil {
			size, err = c.diskSizeForBase(base)
		}
		if err != nil {
			errs = packersdk.MultiErrorAppend(errs, err)
		} else if size != c.diskSize {
			c.diskSize, c.DiskSize = size, formatSize(size)
		}
	}
	if c.DiskBus == "" {
		c.DiskBus = "virtio"
	}
	if !oneOf(c.DiskBus, "virtio", "scsi", "sata") {
		add("disk_bus", "%q is not allowed; use \"virtio\", \"scsi\" or \"sata\"", c.DiskBus)
	}
	if c.NICModel == "" {
		c.NICModel = "virtio"
	}
	if !oneOf(c.NICModel, "virtio", "e1000e", "e1000") {
		add("nic_model", "%q is not allowed; use \"virtio\", \"e1000e\" or \"e1000\"", c.NICModel)
	}
	if windows && c.VirtioWinISO == "" && (c.DiskBus != "sata" || c.NICModel == "virtio") {
		add("virtio_win_iso", "is required for a Windows guest with disk_bus = %q and nic_model = %q: Windows has no virtio drivers, "+
			"so Setup would find no disk (or the guest no network) and the build would only end at winrm_timeout. "+
			"Set virtio_win_iso to the virtio-win ISO (fedorapeople.org virtio-win direct downloads), "+
			"or disk_bus = \"sata\" and nic_model = \"e1000e\"", c.DiskBus, c.NICModel)
	}
	if c.MachineType == "" {
		c.MachineType = "q35"
	}
	if c.Firmware == "" {
		c.Firmware = autounattend.FirmwareBIOS
		if windows {
			c.Firmware = autounattend.FirmwareUEFI
		}
	}
	if !oneOf(c.Firmware, autounattend.FirmwareBIOS, autounattend.FirmwareUEFI) {
		add("firmware", "%q is not allowed; use \"bios\" or \"uefi\"", c.Firmware)
	}
	if c.SecureBoot && c.Firmware != autounattend.FirmwareUEFI {
		add("secure_boot", "needs firmware = \"uefi\"")
	}
	if c.Accelerator == "" {
		c.Accelerator, c.kvmUnavailable = defaultAccelerator(c.LibvirtURI)
	}
	if c.HypervEnlightenments == nil {
		on := windows && c.Accelerator == "kvm"
		c.HypervEnlightenments = &on
	} else if *c.HypervEnlightenments && c.Accelerator == "tcg" {
		add("hyperv_enlightenments", "needs accelerator = \"kvm\": QEMU offers Hyper-V enlightenments only under KVM")
	}
	if !oneOf(c.Accelerator, "kvm", "tcg") {
		add("accelerator", "%q is not allowed; use \"kvm\" or \"tcg\"", c.Accelerator)
	}
	if cpu, err := parseCPUModel(c.CPUModel); err != nil {
		add("cpu_model", "%v", err)
	} else if cpu.Model == "host-passthrough" && c.Accelerator == "tcg" {
		add("cpu_model", "\"host-passthrough\" needs accelerator = \"kvm\": under TCG there is no host CPU to pass through; use \"maximum\" or a model such as %q", defaultTCGCPUModel)
	}
	if _, err := c.renderQemuArgs(qemuArgsData{HTTPIP: userNetGateway, HTTPPort: 8000, SSHHostPort: 2222}); err != nil {
		add("qemuargs", "%v", err)
	}
	for i, a := range c.QemuArgs {
		if len(a) == 0 || !strings.HasPrefix(a[0], "-") {
			add(fmt.Sprintf("qemuargs[%d]", i), "%q is not a QEMU option with its value; each entry is a list like [\"-device\", \"virtio-serial-pci,bus=pcie.0,addr=0x11\"]", a)
		} else if a[0] == "-device" && !strings.Contains(strings.Join(a[1:], ""), "addr=") {
			warnings = append(warnings, fmt.Sprintf("qemuargs[%d]: %q has no addr=: a PCI device without one takes the first free slot before libvirt's devices are placed, "+
				"and the start then fails with \"PCI: slot N function 0 not available\"; give it a slot of its own, e.g. \"bus=%s,addr=0x11\"", i, strings.Join(a[1:], ""), rootBus(c.MachineType)))
		}
	}
	if c.Network == "" && c.Bridge == "" {
		c.Network = "user"
	}
	if c.Network != "" && c.Bridge != "" {
		add("bridge", "set network or bridge, not both")
	}
	if w := winrmInClearWarning(c); w != "" {
		warnings = append(warnings, w)
	}
	if w := windowsSupportWarning(c); w != "" {
		warnings = append(warnings, w)
	}
	if c.HostPortMin == 0 {
		c.HostPortMin = 2222
	}
	if c.HostPortMax == 0 {
		c.HostPortMax = 4444
	}
	if c.HostPortMin > c.HostPortMax || c.HostPortMin < 1 || c.HostPortMax > 65535 {
		add("host_port_min", "the range %d-%d is not a valid port range", c.HostPortMin, c.HostPortMax)
	}
	c.prepareVNC(add)
	if c.KeepInPool && c.StoragePool == "" {
		add("keep_in_pool", "needs storage_pool: the builder's own pool is removed at the end")
	}
	if c.BootTimeout == 0 {
		c.BootTimeout = 2 * time.Minute
	}
	if c.BootPressAnyKey < 0 {
		add("boot_press_any_key", "%s is negative; give a duration such as \"30s\", or leave it unset", c.BootPressAnyKey)
	}

	// Communicator defaults, then the seed, which takes its account from it.
	if c.Comm.Type == "" {
		c.Comm.Type = "ssh"
		if windows {
			c.Comm.Type = "winrm"
		}
	}
	if c.Comm.Type == "winrm" && c.Comm.WinRMUser == "" {
		c.Comm.WinRMUser = "Administrator"
	}
	for _, e := range c.Comm.Prepare(&c.ctx) {
		errs = packersdk.MultiErrorAppend(errs, e)
	}
	if c.Comm.Type == "none" && c.ShutdownCommand != "" {
		add("shutdown_command", "needs a communicator: with communicator = \"none\" the build waits for the guest to power itself off")
	}
	if !isLocalURI(c.LibvirtURI) && c.servesHTTP() && !c.httpBindsOne() {
		add("http_bind_address", "the HTTP server (http_directory, http_content) runs on this machine, not on the remote hypervisor of %s: "+
			"set http_bind_address to an address of this machine the guest can reach through the hypervisor, so {{ .HTTPIP }} is right", c.LibvirtURI)
	}
	errs = packersdk.MultiErrorAppend(errs, c.BootConfig.Prepare(&c.ctx)...)
	errs = packersdk.MultiErrorAppend(errs, c.HTTPConfig.Prepare(&c.ctx)...)
	errs = packersdk.MultiErrorAppend(errs, c.ShutdownConfig.Prepare(&c.ctx)...)
	// The seeds are validated now, though rendered at build time: with the
	// ssh communicator StepSSHKeyGen always provides a key, so stand one in.
	check := *c
	if check.Comm.Type == "ssh" && len(check.Comm.SSHPublicKey) == 0 {
		check.Comm.SSHPublicKey = []byte(placeholderSSHKey)
	}
	if !oneOf(check.Firmware, autounattend.FirmwareBIOS, autounattend.FirmwareUEFI) {
		check.Firmware = "" // reported above, once
	}
	if c.Windows != nil {
		if err := check.windowsSeed().Validate(); err != nil {
			errs = packersdk.MultiErrorAppend(errs, prefixed("windows", err)...)
		}
	}
	if c.Linux != nil {
		c.instanceID = c.Linux.InstanceID
		if c.instanceID == "" {
			c.instanceID = "kubenode-" + c.VMName + "-" + randomSuffix()
		}
		check.instanceID = c.instanceID
		if err := check.linuxSeed().Validate(); err != nil {
			errs = packersdk.MultiErrorAppend(errs, prefixed("linux", err)...)
		}
		if w := proxyCredentialsWarning(c.Linux.HTTPProxy); w != "" {
			warnings = append(warnings, w)
		}
	}
	errs = packersdk.MultiErrorAppend(errs, c.checkDomainXMLPatches()...)
	if errs != nil && len(errs.Errors) > 0 {
		return warnings, errs
	}
	return warnings, nil
}

// maxVNCPassword is the longest VNC password: VNC authentication (DES)
// uses the first 8 characters and ignores the rest, so a longer one would
// be weaker than it looks.
const maxVNCPassword = 8

// prepareVNC checks the opt-in VNC display: off unless vnc_bind_address is
// set, and then never without a password.
func (c *Config) prepareVNC(add func(key, format string, args ...any)) {
	if c.VNCBindAddress == "" {
		if c.VNCPassword != "" {
			add("vnc_password", "is set but vnc_bind_address is not: without it the VM has no VNC port; "+
				"set vnc_bind_address (e.g. \"127.0.0.1\") or remove vnc_password")
		}
		return
	}
	if net.ParseIP(c.VNCBindAddress) == nil {
		add("vnc_bind_address", "%q is not an IP address; give one of the hypervisor's, e.g. \"127.0.0.1\", or leave it unset for no VNC port", c.VNCBindAddress)
	}
	switch n := len([]rune(c.VNCPassword)); {
	case n == 0:
		add("vnc_password", "is required with vnc_bind_address: an open VNC port without a password shows the VM's console "+
			"to every account on the hypervisor and to guests on user-mode networking; set vnc_password (1 to %d characters), "+
			"or unset vnc_bind_address and watch the screen with virt-viewer", maxVNCPassword)
	case n > maxVNCPassword:
		add("vnc_password", "is %d characters; VNC authentication uses only the first %d, so give at most %d", n, maxVNCPassword, maxVNCPassword)
	}
	if c.VNCPassword != "" {
		// Keep it out of Packer's log, which has the domain XML.
		packersdk.LogSecretFilter.Set(c.VNCPassword)
	}
}

// proxyCredentialsWarning warns about a user or password in linux {
// http_proxy }: an authenticated proxy works, so it is no error, but the
// installers copy the URL into the target's apt configuration (mode 0644),
// where only kubenode-bake's generalize removes it, and the seed carries it
// in clear. The password is kept out of Packer's log.
func proxyCredentialsWarning(proxy string) string {
	u, err := url.Parse(proxy)
	if err != nil || u.User == nil {
		return ""
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		packersdk.LogSecretFilter.Set(pw)
	}
	return "linux.http_proxy: the URL holds user information: the installer writes it into the image's apt configuration " +
		"(/etc/apt/apt.conf, /etc/apt/apt.conf.d/90curtin-aptproxy or 90cloud-init-aptproxy, readable by every account), " +
		"which kubenode-bake's generalize removes (with generalize = false every clone keeps it); the seed carries it in clear. " +
		"Use a proxy that needs no credentials for the install, or an account meant for this build only."
}

// TCPURIWarning explains why a qemu+tcp:// libvirt URI, given as key, is
// a risk: the go-libvirt client speaks only the "none" and polkit auth
// schemes, never SASL, and the TCP transport has no encryption. sent names
// what the component sends over it. "" for any other URI. kubenode-export
// warns with it about upload_uri.
func TCPURIWarning(key, uri, sent string) string {
	if u, err := url.Parse(uri); err != nil || u.Scheme != "qemu+tcp" {
		return ""
	}
	return fmt.Sprintf("%s: %q is unencrypted and unauthenticated: this plugin's libvirt client has no SASL, "+
		"so the daemon must accept TCP connections with auth_tcp = \"none\" (anyone who reaches its port controls the hypervisor), "+
		"and %s cross the network in clear. "+
		"Use qemu+ssh://user@host/system instead.", key, uri, sent)
}

// winrmInClearWarning: a Windows build over WinRM without winrm_use_ssl
// speaks Basic authentication over HTTP; on a libvirt network or a bridge
// (not user-mode networking, where the port is forwarded to 127.0.0.1)
// everything on that network can read the build password, the scripts
// and the sysprep step, which carries the clone's Administrator password.
func winrmInClearWarning(c *Config) string {
	if c.Windows == nil || c.Comm.Type == "ssh" || c.Comm.WinRMUseSSL {
		return ""
	}
	attached := "bridge " + strconv.Quote(c.Bridge)
	switch {
	case c.Bridge == "" && (c.Network == "" || c.Network == "user"):
		return ""
	case c.Bridge == "":
		attached = "libvirt network " + strconv.Quote(c.Network)
	}
	return fmt.Sprintf("winrm_use_ssl: is off and the guest is on %s: WinRM uses Basic authentication over unencrypted HTTP (port 5985), "+
		"so the build password, every script and the sysprep step, which carries the clone's Administrator password "+
		"(clone_admin_password or the random one), cross that network in clear. Set winrm_use_ssl = true (with winrm_insecure = true "+
		"for the bootstrap's self-signed certificate), or build on network = \"user\"", attached)
}

// windowsSupportWarning: the builder does not know the kubelet the image
// gets, but it can say which Kubernetes minors' Windows page no longer
// lists windows.version (2019 from v1.36); kubenode-bake warns again when
// it knows both. "" for a release every recorded minor lists.
func windowsSupportWarning(c *Config) string {
	if c.Windows == nil {
		return ""
	}
	minors := versions.MinorsWithoutWindows(c.Windows.Version)
	if len(minors) == 0 {
		return ""
	}
	last := versions.KubernetesMinors[len(versions.KubernetesMinors)-1]
	return fmt.Sprintf("windows.version: Kubernetes' page %q (%s) for %s lists Windows Server %s as the Windows nodes it supports, not %s: "+
		"a node of this image running one of those kubelets (kubenode-bake's default is %s) runs outside what Kubernetes tests. "+
		"Build Windows Server %s, or pair this image with an older Kubernetes minor",
		versions.WindowsSupportPage, versions.WindowsSupportURL, andList(minors), andList(last.WindowsServer),
		c.Windows.Version, versions.Defaults.Kubernetes, strings.Join(last.WindowsServer, " or "))
}

// andList is "a", "a and b", "a, b and c".
func andList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// prefixed turns a seed's validation problems into one error per problem,
// named by the block, e.g. "windows.password: is required".
func prefixed(block string, err error) []error {
	var v *autounattend.ValidationError
	if !errors.As(err, &v) {
		return []error{fmt.Errorf("%s: %w", block, err)}
	}
	out := make([]error, len(v.Problems))
	for i, p := range v.Problems {
		out[i] = fmt.Errorf("%s.%s: %s", block, p.Field, p.Msg)
	}
	return out
}

func (c *Config) windowsSeed() autounattend.Windows {
	w := c.Windows
	user, pass := w.Username, w.Password
	if user == "" {
		user = c.commUser()
	}
	if pass == "" {
		pass = c.commPassword()
	}
	comm := autounattend.CommunicatorWinRM
	if c.Comm.Type == "ssh" {
		comm = autounattend.CommunicatorSSH
	}
	return autounattend.Windows{
		Version: w.Version, Edition: w.Edition, Experience: w.Experience,
		ImageName: w.ImageName, ImageIndex: w.ImageIndex, Firmware: c.Firmware, DiskID: w.DiskID,
		VirtioDrivers: w.VirtioDrivers, VirtioDriveLetters: w.VirtioDriveLetters,
		SkipVirtio: c.DiskBus == "sata" && c.NICModel != "virtio",
		UILanguage: w.UILanguage, InputLocale: w.InputLocale, SystemLocale: w.SystemLocale, UserLocale: w.UserLocale,
		TimeZone: w.TimeZone, ComputerName: w.ComputerName, Username: user, Password: pass,
		PasswordEncoding: w.PasswordEncoding, ProductKey: w.ProductKey,
		Communicator: comm, WinRMUseSSL: c.Comm.WinRMUseSSL,
		SSHAuthorizedKeys:  c.sshPublicKeys(nil),
		FirstLogonCommands: w.FirstLogonCommands,
	}
}

func (c *Config) linuxSeed() autounattend.Linux {
	l := c.Linux
	user, pass := l.Username, l.Password
	if user == "" {
		user = c.Comm.SSHUsername
	}
	if pass == "" && l.PasswordHash == "" {
		pass = c.Comm.SSHPassword
	}
	return autounattend.Linux{
		Flavor: l.Flavor, Hostname: l.Hostname, Username: user, Password: pass, PasswordHash: l.PasswordHash,
		SSHAuthorizedKeys: c.sshPublicKeys(l.SSHAuthorizedKeys), Packages: l.Packages, Disk: l.Disk,
		StorageLayout: l.StorageLayout, Locale: l.Locale, Keyboard: l.Keyboard, Timezone: l.Timezone,
		LateCommands: l.LateCommands, InstanceID: c.instanceID, HTTPProxy: l.HTTPProxy,
	}
}

// sshPublicKeys adds the public key of the temporary key pair, once
// StepSSHKeyGen has made it (Comm.SSHPublicKey is set then).
func (c *Config) sshPublicKeys(keys []string) []string {
	out := append([]string{}, keys...)
	if len(c.Comm.SSHPublicKey) > 0 {
		out = append(out, strings.TrimSpace(string(c.Comm.SSHPublicKey)))
	}
	return out
}

func (c *Config) commUser() string {
	if c.Comm.Type == "winrm" {
		return c.Comm.WinRMUser
	}
	return c.Comm.SSHUsername
}

func (c *Config) commPassword() string {
	if c.Comm.Type == "winrm" {
		return c.Comm.WinRMPassword
	}
	return c.Comm.SSHPassword
}

// maxDiskSize is the largest disk_size accepted: 64T, the largest disk the
// big clouds offer. Anything beyond is a typo, and a number that does not
// fit 64 bits once scaled must never wrap around to a small size.
const maxDiskSize = 64 << 40

// parseDiskSize reads "40G", "20480M", "1T" or a plain number of MiB.
func parseDiskSize(s string) (uint64, error) {
	m := diskSizeRE.FindStringSubmatch(strings.ToUpper(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size like \"40G\", \"20480M\" or \"1T\"", s)
	}
	shift := map[string]uint{"": 20, "M": 20, "G": 30, "T": 40}[m[2]]
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil || n > maxDiskSize>>shift {
		return 0, fmt.Errorf("%q is larger than the largest size allowed, 64T", s)
	}
	n <<= shift
	if n < 1<<30 {
		return 0, fmt.Errorf("%q is smaller than 1G", s)
	}
	return n, nil
}

func oneOf(s string, allowed ...string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}
