// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package harness starts the real components integration tests drive
// (libvirtd, the pinned packer with this plugin installed, the Debian base
// disk) through the project's scripts. A missing component fails the test
// with the command that provides it; nothing is skipped silently.
package harness

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func script(t testing.TB, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(Root(), "scripts", name)}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/%s %s failed: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// RequireRoot fails unless the test runs as root (libvirtd, debootstrap).
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this integration test needs root: it starts libvirtd and builds a disk with debootstrap")
	}
}

// Libvirtd makes sure libvirtd answers on its socket, starting it if it is
// not running, and stops it when the test ends if it started it.
func Libvirtd(t testing.TB) {
	t.Helper()
	RequireRoot(t)
	if err := exec.Command("bash", filepath.Join(Root(), "scripts", "libvirtd.sh"), "status").Run(); err == nil {
		return
	}
	script(t, "libvirtd.sh", "start")
	t.Cleanup(func() {
		exec.Command("bash", filepath.Join(Root(), "scripts", "libvirtd.sh"), "stop").Run()
	})
}

// BaseDisk returns the cached Debian 12 qcow2, building it (~5 min) if needed.
// ifupdown brings up what cloud-init renders.
func BaseDisk(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	return script(t, "base-disk.sh")
}

// BaseDiskNetplan returns the cached Debian 12 qcow2 networked as a cloud
// image is (scripts/base-disk.sh netplan), building it (~5 min) if needed:
// netplan on systemd-networkd, cloud-init rendering netplan (its fallback
// matches the NIC by MAC address) and disabled by ds-identify on a VM with
// no NoCloud seed.
func BaseDiskNetplan(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	return script(t, "base-disk.sh", "netplan")
}

// InstallerISO returns the cached installer-shaped ISO (scripts/installer-iso.sh:
// hybrid BIOS/UEFI install media that install the base disk's Debian system),
// building it and the base disk if needed. Its sha256sum file lies beside it,
// at the returned path + ".sha256".
func InstallerISO(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	return script(t, "installer-iso.sh")
}

// Packer returns the pinned packer binary.
func Packer(t testing.TB) string {
	t.Helper()
	p := os.Getenv("KUBENODE_PACKER")
	if p == "" {
		t.Fatal("KUBENODE_PACKER is not set: run through `make integration`, or `eval \"$(scripts/setup.sh env)\"` after `scripts/setup.sh packer`")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("packer not found at %s: run scripts/setup.sh packer", p)
	}
	return p
}

// PackerMPL returns the packer of Packer's last MPL-2.0 release line
// (KUBENODE_PACKER_MPL, v1.9.4), which the bake's guest test builds with.
func PackerMPL(t testing.TB) string {
	t.Helper()
	p := os.Getenv("KUBENODE_PACKER_MPL")
	if p == "" {
		t.Fatal("KUBENODE_PACKER_MPL is not set: run through `make integration`, or `eval \"$(scripts/setup.sh env)\"` after `scripts/setup.sh packer-mpl`")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("packer not found at %s: run scripts/setup.sh packer-mpl", p)
	}
	return p
}
