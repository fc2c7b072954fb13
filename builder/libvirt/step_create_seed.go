// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
)

// stepCreateSeed renders the seed disc (windows, linux or seed_files) to a
// local temporary ISO.
//
// Uses: config, ui, image_index. Produces: seed_iso (absent when there is no seed).
type stepCreateSeed struct {
	dir string
}

func (s *stepCreateSeed) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	imageIndex, _ := state.Get(stateImageIndex).(int)
	disc, ok, err := c.seedDisc(imageIndex)
	if err != nil {
		return halt(state, ui, fmt.Errorf("rendering the seed: %w", err))
	}
	if !ok {
		return multistep.ActionContinue
	}
	names := make([]string, len(disc.Files))
	for i, f := range disc.Files {
		names[i] = f.Name
	}
	ui.Say(fmt.Sprintf("Creating seed disc %q with %v", disc.Label, names))
	if c.SeedDirectory != "" {
		if err := writeSeedDirectory(c.SeedDirectory, disc); err != nil {
			return halt(state, ui, fmt.Errorf("seed_directory: %w", err))
		}
		ui.Message(fmt.Sprintf("Seed files written to %s", c.SeedDirectory))
	}
	s.dir, err = os.MkdirTemp("", "kubenode-seed-")
	if err != nil {
		return halt(state, ui, err)
	}
	iso := filepath.Join(s.dir, "seed.iso")
	if err := autounattend.WriteISOFile(iso, disc); err != nil {
		return halt(state, ui, err)
	}
	state.Put(stateSeedISO, iso)
	return multistep.ActionContinue
}

func (s *stepCreateSeed) Cleanup(state multistep.StateBag) {
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.dir = ""
	}
}

// seedDisc renders the configured seed; ok is false when none is configured.
// imageIndex, when above 0, is the install image stepCheckInstallImage found
// on the disc for the configured selection: the answer file then selects
// exactly that image.
func (c *Config) seedDisc(imageIndex int) (autounattend.Disc, bool, error) {
	switch {
	case c.Windows != nil:
		w := c.windowsSeed()
		if imageIndex > 0 {
			w.ImageIndex, w.ImageName = imageIndex, ""
		}
		d, err := autounattend.WindowsSeed(w)
		return d, true, err
	case c.Linux != nil:
		d, err := autounattend.LinuxSeed(c.linuxSeed())
		return d, true, err
	case len(c.SeedFiles) > 0:
		d := autounattend.Disc{Label: c.SeedLabel}
		names := make([]string, 0, len(c.SeedFiles))
		for n := range c.SeedFiles {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			data, err := os.ReadFile(c.SeedFiles[n])
			if err != nil {
				return d, true, fmt.Errorf("seed_files[%q]: %w", n, err)
			}
			d.Files = append(d.Files, autounattend.File{Name: n, Data: data})
		}
		return d, true, d.Validate()
	}
	return autounattend.Disc{}, false, nil
}

// writeSeedDirectory writes the disc's files under dir, each replacing
// what its name held (a link is replaced, not followed; a file's owner and
// mode are not kept) with a new file only its owner reads: seeds hold
// password hashes and keys. A directory of the disc that is a link in dir
// is an error.
func writeSeedDirectory(dir string, d autounattend.Disc) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range d.Files {
		name := filepath.FromSlash(f.Name)
		if err := safefile.MkdirAll(dir, filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := safefile.WriteFile(filepath.Join(dir, name), f.Data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// halt records err for Packer, shows it, and stops the build.
func halt(state multistep.StateBag, ui packersdk.Ui, err error) multistep.StepAction {
	state.Put("error", err)
	ui.Error(err.Error())
	return multistep.ActionHalt
}
