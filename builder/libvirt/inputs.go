// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
)

// inputs are the files the build started from, with their sha256: the
// install ISO or the base disk (iso_url, or disk_image), virtio_win_iso
// and extra_cdroms. A checksum Packer checked the file against that is
// a sha256 is taken as it is (iso_checksum's `file:` form was resolved by
// Prepare); otherwise the file this machine read is hashed now.
func (c *Config) inputs(ui packersdk.Ui, state multistep.StateBag) []Input {
	var out []Input
	add := func(name, location, checksum, local string) {
		in := Input{Name: name, URI: absPath(location), SHA256: sha256Checksum(checksum)}
		if in.SHA256 == "" && local != "" {
			ui.Say(fmt.Sprintf("Computing the sha256 of %s (%s) for the image's provenance", name, local))
			sum, err := filehash.SHA256(local)
			if err != nil {
				ui.Error(fmt.Sprintf("The image's provenance names %s without its sha256: %v", name, err))
			}
			in.SHA256 = sum
		}
		out = append(out, in)
	}
	switch c.source {
	case sourceInstallISO, sourceISOURLDisk:
		key := stateISOPath
		if c.source == sourceISOURLDisk {
			key = stateBaseDisk
		}
		local, _ := state.Get(key).(string)
		if len(c.ISOUrls) > 0 {
			add("iso_url", c.ISOUrls[0], c.ISOChecksum, local)
		}
	}
	for _, f := range c.sourceFiles() {
		add(f.key, f.location, f.checksum, f.path(state))
	}
	return out
}

var hexSHA256 = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// sha256Checksum is the hex digest of a checksum in Packer's forms when it
// is a sha256 ("sha256:<hex>", or 64 hex digits, which Packer takes for
// one), "" otherwise.
func sha256Checksum(checksum string) string {
	v := checksum
	if t, rest, ok := strings.Cut(checksum, ":"); ok {
		if !strings.EqualFold(t, "sha256") {
			return ""
		}
		v = rest
	}
	if !hexSHA256.MatchString(v) {
		return ""
	}
	return strings.ToLower(v)
}
