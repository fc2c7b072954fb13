// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// stepCheckFirmwareAccess stops a build whose firmware state
// stepSaveFirmwareState would fail to read, before anything is downloaded
// or created: without it a UEFI Windows build run as an ordinary user
// installs Windows, bakes and shuts down, and only then fails to copy the
// EFI variables. It runs when the firmware state is kept (firmware uefi or
// tpm, a local libvirt_uri, no keep_in_pool).
//
// libvirt creates the files only when the domain is defined, so the step
// checks the directories they will be in: root passes; any other user
// needs search permission on nvramDir (for uefi) and swtpmStateDir (for
// tpm) and on each of their parents. A directory that does not exist yet
// ends the walk (libvirt creates it). This catches Debian's and Ubuntu's
// /var/lib/libvirt/qemu (mode 0750, owner libvirt-qemu); a searchable
// directory does not prove the files readable (libvirt writes them with
// mode 0600 for its own users), so stepSaveFirmwareState can still fail.
//
// Uses: config, ui. Produces: nothing.
type stepCheckFirmwareAccess struct {
	// searchable reports whether the running user may search (enter) a
	// directory; nil is canSearch. Tests replace it.
	searchable func(dir string) error
}

func (s *stepCheckFirmwareAccess) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	searchable := s.searchable
	if searchable == nil {
		searchable = canSearch
	}
	if err := checkFirmwareAccess(c, searchable); err != nil {
		return halt(state, ui, err)
	}
	return multistep.ActionContinue
}

func (s *stepCheckFirmwareAccess) Cleanup(multistep.StateBag) {}

// keepsFirmwareState is stepSaveFirmwareState's condition: the EFI
// variables and TPM state are copied into output_directory.
func (c *Config) keepsFirmwareState() bool {
	return (c.Firmware == "uefi" || c.TPM) && !c.KeepInPool && isLocalURI(c.LibvirtURI)
}

// checkFirmwareAccess says which directory of the firmware state the
// running user cannot enter, and what to do about it.
func checkFirmwareAccess(c *Config, searchable func(string) error) error {
	if !c.keepsFirmwareState() {
		return nil
	}
	type place struct{ key, dir, what string }
	var places []place
	if c.Firmware == "uefi" {
		places = append(places, place{`firmware = "uefi"`, nvramDir, "the EFI variables from " + filepath.Join(nvramDir, c.VMName+"_VARS.fd")})
	}
	if c.TPM {
		places = append(places, place{"tpm = true", swtpmStateDir, "the TPM state from " + filepath.Join(swtpmStateDir, "<the VM's UUID>")})
	}
	for _, p := range places {
		blocked, err := firstUnsearchable(p.dir, searchable)
		if err == nil {
			continue
		}
		return fmt.Errorf("%s with the local libvirt_uri %q keeps the firmware state: after the install and the provisioners, the builder copies %s into output_directory, "+
			"but %s%s is not searchable by %s (%v), so that copy would fail at the end of the build. "+
			"Run packer as root (e.g. `sudo packer build`), "+
			"or set keep_in_pool = true (with storage_pool; the image stays in the pool and the firmware state is not kept), "+
			"or build on a remote libvirt_uri (qemu+ssh://...; the firmware state is not kept), "+
			"or, for an image that needs neither, firmware = \"bios\" without tpm",
			p.key, c.LibvirtURI, p.what, blocked, describeDir(blocked), currentUser(), err)
	}
	return nil
}

// firstUnsearchable walks from / down to dir and returns the first
// existing directory searchable refuses, with its error. It stops at the
// first one that does not exist.
func firstUnsearchable(dir string, searchable func(string) error) (string, error) {
	dir = filepath.Clean(dir)
	var chain []string
	for p := dir; ; p = filepath.Dir(p) {
		chain = append(chain, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		p := chain[i]
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err := searchable(p); err != nil {
			return p, err
		}
	}
	return "", nil
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return "user " + u.Username
	}
	return "uid " + strconv.Itoa(os.Geteuid())
}
