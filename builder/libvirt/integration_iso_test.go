// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package libvirt_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
)

// The installer fixture's serial console lines (scripts/installer-iso).
const (
	installStarted  = "kubenode-installer: install started"
	installComplete = "kubenode-installer: install complete, rebooting"
	pressAnyKey     = "Press any key to boot from CD or DVD"
	bootedFromDisk  = "kubenode-installed: booting from disk (%s)"
)

// TestInstallFromISO is the path a first build takes: `packer build` from
// an install ISO. The ISO (scripts/installer-iso.sh) is shaped like real
// install media: GRUB under UEFI asks to press a key and otherwise falls
// through to the disk, isolinux under BIOS waits at boot:, and the
// installer runs only with the arguments boot_command types, reads its
// answer file from a disc found by label, partitions, formats, writes
// Debian, installs both boot loaders and reboots. One template, two
// sources at once (UEFI and BIOS, so two builds in parallel on the same
// libvirtd, each with its own forwarded port): iso_url with iso_checksum
// through the download step, boot_press_any_key, boot_command over
// SendKey, the installer's reboot, SSH into the installed system, a shell
// provisioner, shutdown, export. Then both exported images boot again:
// the UEFI one here with fresh firmware variables, as a build from a local
// base disk (Packer's HTTP server, the vCPU's x86-64 level, kubenode-export
// compressing its image), the BIOS one fetched over HTTP
// (disk_image = true) and built on a remote hypervisor (qemu+ssh://).
func TestInstallFromISO(t *testing.T) {
	harness.Libvirtd(t)
	iso := harness.InstallerISO(t)
	plugins := harness.PluginDir(t)

	const answerLabel = "kninstall"
	answers := filepath.Join(t.TempDir(), "answers.iso")
	require.NoError(t, autounattend.WriteISOFile(answers, autounattend.Disc{Label: answerLabel, Files: []autounattend.File{
		{Name: "kubenode-install.conf", Data: []byte("disk=/dev/vda\nhostname=kubenode-installed\n")},
	}}))
	suffix := fmt.Sprintf("%d", time.Now().Unix()%100000)

	start := time.Now()
	r := startPacker(t, plugins, "install-from-iso.pkr.hcl", "kn-it-iso-", func(r *packerRun) []string {
		return []string{"iso_url=file://" + iso, "iso_checksum=file:" + iso + ".sha256", "answer_iso=" + answers,
			"seed_label=" + answerLabel, "suffix=" + suffix, "output_root=" + r.outDir}
	})
	require.NoError(t, r.wait(45*time.Minute), r.output.String())
	t.Logf("install from ISO, UEFI and BIOS at once: %s", time.Since(start).Round(time.Second))
	out := r.output.String()

	// Two builds at once, each forwarding its own port.
	ports := regexp.MustCompile(`kubenode-libvirt\.(uefi|bios): Forwarding 127\.0\.0\.1:(\d+) `).FindAllStringSubmatch(out, -1)
	require.Len(t, ports, 2, "each build reserves a port")
	assert.NotEqual(t, ports[0][2], ports[1][2], "parallel builds were given the same port")
	assert.Contains(t, out, "kubenode-libvirt.uefi: Pressing the space bar")
	assert.Regexp(t, `kubenode-libvirt\.(uefi|bios): (Using|Download|Verif)`, out, "the ISO went through the download step")

	for _, fw := range []string{"uefi", "bios"} {
		t.Run(fw, func(t *testing.T) {
			dir := filepath.Join(r.outDir, fw)
			serial, err := os.ReadFile(filepath.Join(dir, "serial.log"))
			require.NoError(t, err)
			log := string(serial)
			assert.Equal(t, 1, strings.Count(log, installStarted), "the installer ran once")
			assert.Equal(t, 1, strings.Count(log, installComplete), "the installer finished once")
			done := strings.Index(log, installComplete)
			fromDisk := strings.LastIndex(log, fmt.Sprintf(bootedFromDisk, fw))
			assert.Greater(t, fromDisk, done, "after the installer's reboot the VM booted from the disk")
			if fw == "uefi" {
				assert.Contains(t, log[:max(done, 0)], pressAnyKey, "the disc's UEFI prompt was shown and answered")
			}
			assert.Contains(t, out, "kubenode-libvirt."+fw+": provisioned-"+fw, "the shell provisioner ran on the installed system")
			assert.Contains(t, out, "kubenode-libvirt."+fw+": firmware-is-"+fw)
			image := filepath.Join(dir, "kn-it-iso-"+fw+"-"+suffix+".qcow2")
			_, err = os.Stat(image)
			require.NoError(t, err, "the exported image")
		})
	}
	for _, d := range virsh(t, "list", "--all", "--name") {
		assert.NotContains(t, d, "kn-it-iso-", "domain left after the builds")
	}
	for _, p := range virsh(t, "pool-list", "--all", "--name") {
		assert.NotContains(t, p, "kn-it-iso-", "pool left after the builds")
	}

	// Both exported images boot again, each under its firmware, and hold
	// what the provisioner wrote. The UEFI one boots on this libvirtd
	// with fresh variables: the installed GRUB must be found without the
	// first boot's NVRAM. The BIOS one is taken as users of the qemu
	// builder take a cloud image (iso_url over HTTP with disk_image =
	// true, checked against a published .sha256 file, through Packer's
	// cache) and built on a hypervisor reached as a remote one,
	// qemu+ssh://root@127.0.0.1:PORT/system through a throwaway sshd:
	// every libvirt call, the upload and the download go over SSH.
	remote := harness.SSHD(t)
	biosName := "kn-it-iso-bios-" + suffix + ".qcow2"
	biosDir := filepath.Join(r.outDir, "bios")
	biosSum := fileSHA256(t, filepath.Join(biosDir, biosName))
	require.NoError(t, os.WriteFile(filepath.Join(biosDir, biosName+".sha256"), []byte(biosSum+"  "+biosName+"\n"), 0o644))
	var fetched sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fetched.Store(req.URL.Path, true)
		http.FileServer(http.Dir(biosDir)).ServeHTTP(w, req)
	}))
	defer srv.Close()
	start = time.Now()
	again := startPacker(t, plugins, "boot-installed.pkr.hcl", "kn-it-iso-", func(a *packerRun) []string {
		return []string{
			"uefi_disk=" + filepath.Join(r.outDir, "uefi", "kn-it-iso-uefi-"+suffix+".qcow2"),
			"bios_disk=true", "bios_iso_url=" + srv.URL + "/" + biosName,
			"bios_iso_checksum=file:" + srv.URL + "/" + biosName + ".sha256",
			"bios_libvirt_uri=" + remote,
			"suffix=" + suffix, "output_root=" + a.outDir}
	})
	require.NoError(t, again.wait(20*time.Minute), again.output.String())
	t.Logf("both exported images booted again (BIOS on %s): %s", remote, time.Since(start).Round(time.Second))
	out = again.output.String()
	for _, fw := range []string{"uefi", "bios"} {
		assert.Contains(t, out, "kubenode-libvirt."+fw+": provisioned-"+fw, "the exported image lost the provisioner's change")
		assert.Contains(t, out, "kubenode-libvirt."+fw+": firmware-is-"+fw)
		assert.Contains(t, out, "kubenode-libvirt."+fw+": hostname-is-kubenode-iso-"+fw+"2", "the guest's host name, from the second build's seed (the install's was kubenode-iso-"+fw+")")
	}
	serial, err := os.ReadFile(filepath.Join(again.outDir, "uefi2", "serial.log"))
	require.NoError(t, err)
	assert.Contains(t, string(serial), fmt.Sprintf(bootedFromDisk, "uefi"))
	assert.NotContains(t, string(serial), installStarted)
	assert.Contains(t, string(serial), "Linux version", "the serial console log holds the guest's boot")

	// The UEFI one is a build from a local base disk, as from a cloud
	// image on disk: the guest reaches Packer's HTTP server at
	// build.PackerHTTPAddr (QEMU's user-network gateway), its vCPU (the
	// default TCG CPU model) runs x86-64-v2 userspaces, and kubenode-export
	// compresses the exported qcow2 in place, with its checksum and manifest.
	t.Run("uefi2: a build from a local disk image, exported", func(t *testing.T) {
		assert.Regexp(t, `kubenode-libvirt\.uefi: +x86-64-v2 \(supported, searched\)`, out, "the default TCG CPU model runs x86-64-v2 userspaces")
		assert.Contains(t, out, "kubenode-libvirt.uefi: http-check: served-by-packer", "the guest reached Packer's HTTP server at build.PackerHTTPAddr")
		assert.Contains(t, out, "The guest reaches the HTTP server at 10.0.2.2")
		dir := filepath.Join(again.outDir, "uefi2")
		name := "kn-it-iso-uefi2-" + suffix + ".qcow2"
		info, err := exec.Command("qemu-img", "info", "--output=json", filepath.Join(dir, name)).CombinedOutput()
		require.NoError(t, err, string(info))
		assert.Contains(t, string(info), `"format": "qcow2"`)
		assert.NotContains(t, string(info), "backing-filename", "the exported image must not depend on a backing file")
		assert.Contains(t, string(info), `"compression-type": "zstd"`, "kubenode-export compressed the image in place")
		sum := exec.Command("sha256sum", "-c", name+".sha256")
		sum.Dir = dir
		res, err := sum.CombinedOutput()
		require.NoError(t, err, string(res))
		manifest, err := os.ReadFile(filepath.Join(dir, "kubenode-manifest.json"))
		require.NoError(t, err)
		assert.Contains(t, string(manifest), `"family": "linux"`)
		// No bake asked the guest: its release is left empty, not the seed's flavor.
		assert.Contains(t, string(manifest), `"version": ""`)
		assert.Contains(t, string(manifest), `"seed_flavor": "cloud-init"`)
		_, err = os.Stat(filepath.Join(again.outDir, "bios2", "kubenode-manifest.json"))
		assert.True(t, os.IsNotExist(err), "the export ran for the UEFI build only")
	})

	// The remote build: fetched over HTTP into Packer's cache, its export
	// downloaded over SSH, its serial log left on the hypervisor.
	for _, p := range []string{"/" + biosName, "/" + biosName + ".sha256"} {
		_, ok := fetched.Load(p)
		assert.True(t, ok, "%s was not fetched", p)
	}
	cached, err := filepath.Glob(filepath.Join(again.cacheDir, "*.img"))
	require.NoError(t, err)
	require.Len(t, cached, 1, "the image is in Packer's cache")
	assert.Equal(t, biosSum, fileSHA256(t, cached[0]))
	info, err := exec.Command("qemu-img", "info", filepath.Join(again.outDir, "bios2", "kn-it-iso-bios2-"+suffix+".qcow2")).CombinedOutput()
	require.NoError(t, err, string(info))
	assert.Contains(t, string(info), "file format: qcow2", "the export downloaded over SSH")
	_, err = os.Stat(filepath.Join(again.outDir, "bios2", "serial.log"))
	assert.True(t, os.IsNotExist(err), "a remote hypervisor's serial log stays there")
	for _, d := range virsh(t, "list", "--all", "--name") {
		assert.NotContains(t, d, "kn-it-iso-", "domain left after a successful build")
	}
	for _, p := range virsh(t, "pool-list", "--all", "--name") {
		assert.NotContains(t, p, "kn-it-iso-", "storage pool left after a successful build")
	}
}

// TestCommunicatorNoneWaitsForTheGuestToPowerOff: with communicator =
// "none" the build connects to nothing and presses no power button; it
// waits for the guest to power itself off. The installer disc's default
// entry, with no boot_command, installs nothing and powers off after
// isolinux's timeout.
func TestCommunicatorNoneWaitsForTheGuestToPowerOff(t *testing.T) {
	harness.Libvirtd(t)
	iso := harness.InstallerISO(t)
	plugins := harness.PluginDir(t)
	const vm = "kn-it-none"
	start := time.Now()
	r := startPacker(t, plugins, "power-off-itself.pkr.hcl", vm, func(r *packerRun) []string {
		return []string{"iso_url=file://" + iso, "iso_checksum=file:" + iso + ".sha256", "vm_name=" + vm, "output_directory=" + r.outDir}
	})
	require.NoError(t, r.wait(15*time.Minute), r.output.String())
	t.Logf("build with communicator none: %s", time.Since(start).Round(time.Second))
	out := r.output.String()
	assert.Contains(t, out, `power itself off (communicator = "none")`)
	assert.Contains(t, out, "Guest powered off after")
	assert.NotContains(t, out, "Asking the guest to power off (ACPI)")
	serial, err := os.ReadFile(filepath.Join(r.outDir, "serial.log"))
	require.NoError(t, err)
	assert.Contains(t, string(serial), "kubenode-installer: no kubenode.seed= on the kernel command line; not installing")
	assert.NotContains(t, string(serial), installStarted)
	_, err = os.Stat(filepath.Join(r.outDir, vm+".qcow2"))
	assert.NoError(t, err, "the disk is exported after the power-off")
	for _, d := range virsh(t, "list", "--all", "--name") {
		assert.NotContains(t, d, vm, "domain left after the build")
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	sum, err := filehash.SHA256(path)
	require.NoError(t, err)
	return sum
}
