// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
)

// cleanup removes the token from every file the joiner wrote or read and
// can write, and disables the first-boot service. It also runs on a node
// that is already a member: an earlier run may have joined and then failed
// (node-ready timed out) before it could clean up.
func cleanup(_ context.Context, d *data) error {
	var errs []error
	switch err := os.Remove(d.opts.Paths.KubeadmConfig); {
	case err == nil:
		d.scrubbed = append(d.scrubbed, d.opts.Paths.KubeadmConfig)
		fmt.Fprintf(d.opts.Log, "[cleanup] removed %s, which held the token\n", d.opts.Paths.KubeadmConfig)
	case !errors.Is(err, os.ErrNotExist):
		errs = append(errs, err)
	}
	errs = append(errs, scrubTokens(d, "cleanup")...)
	for _, s := range d.sources {
		if s != "flags" && s != d.opts.ConfigFile && s != d.opts.Paths.Config && s != d.opts.Paths.SeedFile {
			fmt.Fprintf(d.opts.Log, "[cleanup] the seed disc %s still holds the (now used) token: detach it from the VM\n", s)
		}
	}
	if err := d.opts.Host.DisableFirstBoot(); err != nil {
		errs = append(errs, fmt.Errorf("disabling the first-boot service: %w", err))
	}
	return errors.Join(errs...)
}

// scrubTokens removes the token from the configuration files this run read
// (the image's and --config's) and removes the join seed file; it records
// and logs each file it changed.
func scrubTokens(d *data, phase string) []error {
	var errs []error
	if f := d.opts.Paths.SeedFile; f != "" {
		switch err := os.Remove(f); {
		case err == nil:
			d.scrubbed = append(d.scrubbed, f)
			fmt.Fprintf(d.opts.Log, "[%s] removed the join seed file %s, which held the token\n", phase, f)
		case !errors.Is(err, os.ErrNotExist):
			errs = append(errs, fmt.Errorf("removing the join seed file: %w", err))
		}
	}
	for _, path := range []string{d.opts.ConfigFile, d.opts.Paths.Config} {
		if path == "" || !slices.Contains(d.sources, path) {
			continue
		}
		switch had, err := scrubToken(path); {
		case err != nil:
			errs = append(errs, fmt.Errorf("removing the token from %s: %w", path, err))
		case had:
			d.scrubbed = append(d.scrubbed, path)
			fmt.Fprintf(d.opts.Log, "[%s] removed the token from %s\n", phase, path)
		}
	}
	return errs
}

// scrubToken removes the token from the configuration file at path and
// says whether there was one.
func scrubToken(path string) (bool, error) {
	c := config.New()
	if err := c.MergeFile(path); err != nil {
		return false, err
	}
	if c.Token == "" {
		return false, nil
	}
	c.Token = ""
	return true, c.WriteFile(path)
}
