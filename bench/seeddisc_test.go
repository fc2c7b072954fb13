// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
)

// typicalWindows is the seed disc of a Windows Server 2022 UEFI build:
// Autounattend.xml and the first-logon bootstrap.
func typicalWindows(b *testing.B) autounattend.Disc {
	b.Helper()
	d, err := autounattend.WindowsSeed(autounattend.Windows{Version: "2022", Password: "Kube-Node-2026!", WinRMUseSSL: true})
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkSeedDiscInProcess renders the seed and writes the ISO file with
// autounattend, as the builder does.
func BenchmarkSeedDiscInProcess(b *testing.B) {
	w := autounattend.Windows{Version: "2022", Password: "Kube-Node-2026!", WinRMUseSSL: true}
	out := filepath.Join(b.TempDir(), "seed.iso")
	b.ReportAllocs()
	for b.Loop() {
		d, err := autounattend.WindowsSeed(w)
		if err != nil {
			b.Fatal(err)
		}
		if err := autounattend.WriteISOFile(out, d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSeedDiscXorriso writes the same files with `xorriso -as mkisofs
// -J -R`, what the Packer SDK spawns for cd_files. The files are staged on
// disk once, outside the timed loop.
func BenchmarkSeedDiscXorriso(b *testing.B) {
	xorriso, err := exec.LookPath("xorriso")
	if err != nil {
		b.Fatal("xorriso is not installed: run `scripts/setup.sh packages`")
	}
	dir := b.TempDir()
	stage := filepath.Join(dir, "stage")
	if err := os.Mkdir(stage, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, f := range typicalWindows(b).Files {
		if err := os.WriteFile(filepath.Join(stage, f.Name), f.Data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	out := filepath.Join(dir, "seed.iso")
	for b.Loop() {
		os.Remove(out)
		cmd := exec.Command(xorriso, "-as", "mkisofs", "-quiet", "-J", "-R", "-V", autounattend.WindowsSeedLabel, "-o", out, stage)
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("xorriso: %v\n%s", err, msg)
		}
	}
}
