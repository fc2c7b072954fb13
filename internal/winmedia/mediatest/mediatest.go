// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package mediatest makes small Windows-like install discs for tests with
// the tools that make real ones' parts: wimtools (wimcapture, wimappend,
// wimexport) for install.wim and install.esd, and genisoimage for a UDF
// bridge disc whose install image is only in the UDF tree, as on
// Microsoft's discs. A missing tool fails the test, naming the command
// that installs it.
package mediatest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Image is one image to put into a WIM.
type Image struct {
	Name, DisplayName, EditionID, InstallationType string
}

// EvaluationImages are the four images of a Windows Server evaluation
// disc of product ("Windows Server 2022"), in their order there: Standard
// Core, Standard Desktop, Datacenter Core, Datacenter Desktop. Their names
// are the retail ones; their EditionID ends in "Eval" and their display
// name says "Evaluation", as on Microsoft's evaluation media.
func EvaluationImages(product string) []Image {
	return []Image{
		{product + " SERVERSTANDARDCORE", product + " Standard Evaluation", "ServerStandardEval", "Server Core"},
		{product + " SERVERSTANDARD", product + " Standard Evaluation (Desktop Experience)", "ServerStandardEval", "Server"},
		{product + " SERVERDATACENTERCORE", product + " Datacenter Evaluation", "ServerDatacenterEval", "Server Core"},
		{product + " SERVERDATACENTER", product + " Datacenter Evaluation (Desktop Experience)", "ServerDatacenterEval", "Server"},
	}
}

// VolumeImages are the images of licensed (volume or retail) media of
// product, in the evaluation disc's order: the same names, EditionIDs
// without "Eval".
func VolumeImages(product string) []Image {
	return []Image{
		{product + " SERVERSTANDARDCORE", product + " Standard", "ServerStandard", "Server Core"},
		{product + " SERVERSTANDARD", product + " Standard (Desktop Experience)", "ServerStandard", "Server"},
		{product + " SERVERDATACENTERCORE", product + " Datacenter", "ServerDatacenter", "Server Core"},
		{product + " SERVERDATACENTER", product + " Datacenter (Desktop Experience)", "ServerDatacenter", "Server"},
	}
}

// WIM writes dir/install.wim holding images (each a one-file tree), or
// with esd dir/install.esd, exported from it with solid LZMS resources as
// Microsoft's ESDs are. It returns the file's path.
func WIM(t testing.TB, dir string, images []Image, esd bool) string {
	t.Helper()
	src := filepath.Join(dir, "image-root")
	must(t, os.MkdirAll(filepath.Join(src, "Windows", "System32"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "Windows", "System32", "kernel32.dll"), []byte("not really"), 0o644))
	wim := filepath.Join(dir, "install.wim")
	for i, im := range images {
		tool := "wimappend"
		if i == 0 {
			tool = "wimcapture"
		}
		args := []string{src, wim, im.Name}
		for k, v := range map[string]string{"DISPLAYNAME": im.DisplayName, "WINDOWS/EDITIONID": im.EditionID, "WINDOWS/INSTALLATIONTYPE": im.InstallationType} {
			if v != "" {
				args = append(args, "--image-property", k+"="+v)
			}
		}
		run(t, tool, args...)
	}
	if !esd {
		return wim
	}
	out := filepath.Join(dir, "install.esd")
	run(t, "wimexport", wim, "all", out, "--solid")
	must(t, os.Remove(wim))
	return out
}

// WindowsISO writes dir/windows.iso, a UDF bridge disc with setup.exe,
// boot/bcd and sources/<base name of installImage>, the install image
// hidden from the ISO 9660 tree as on Microsoft's discs.
func WindowsISO(t testing.TB, dir, installImage string) string {
	t.Helper()
	root := filepath.Join(dir, "disc")
	must(t, os.MkdirAll(filepath.Join(root, "sources"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "boot"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "setup.exe"), []byte("MZ"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "boot", "bcd"), []byte("bcd"), 0o644))
	data, err := os.ReadFile(installImage)
	must(t, err)
	name := filepath.Base(installImage)
	must(t, os.WriteFile(filepath.Join(root, "sources", name), data, 0o644))
	iso := filepath.Join(dir, "windows.iso")
	run(t, "genisoimage", "-quiet", "-udf", "-iso-level", "3", "-V", "SSS_X64FREE_EN-US_DV9",
		"-hide", "sources", "-hide", name, "-o", iso, root)
	return iso
}

// PlainISO writes dir/name, an ISO 9660 disc (Rock Ridge, Joliet, no UDF)
// holding files (name on the disc -> content), like a Linux installer.
func PlainISO(t testing.TB, dir, name string, udf bool, files map[string]string) string {
	t.Helper()
	root := filepath.Join(dir, name+"-root")
	for n, content := range files {
		p := filepath.Join(root, filepath.FromSlash(n))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	must(t, os.MkdirAll(root, 0o755))
	iso := filepath.Join(dir, name)
	args := []string{"-quiet", "-R", "-J", "-V", "LINUX", "-o", iso}
	if udf {
		args = append(args, "-udf")
	}
	run(t, "genisoimage", append(args, root)...)
	return iso
}

func run(t testing.TB, tool string, args ...string) {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		t.Fatalf("%s is not installed: run `scripts/setup.sh packages` (Debian packages wimtools and genisoimage)", tool)
	}
	if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", tool, args, err, out)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
