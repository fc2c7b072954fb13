// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !windows

package seed

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
)

// findSeedOnce reads the ISO 9660 label of each candidate device straight
// from its primary volume descriptor: no mount, no udev needed.
func findSeedOnce(p config.Paths) ([]byte, string, error) {
	var devices []string
	for _, pattern := range p.SeedDevices {
		m, _ := filepath.Glob(pattern)
		devices = append(devices, m...)
	}
	var errs []error
	for _, dev := range devices {
		data, err := readSeed(dev)
		if err == nil {
			return data, dev, nil
		}
		if !errors.Is(err, errNotSeed) {
			errs = append(errs, fmt.Errorf("%s: %w", dev, err))
		}
	}
	if len(errs) > 0 {
		return nil, "", errors.Join(errs...)
	}
	return nil, "", fmt.Errorf("none of %d devices matching %v is labelled %s", len(devices), p.SeedDevices, config.SeedLabel)
}

var errNotSeed = errors.New("not a join seed")

func readSeed(dev string) ([]byte, error) {
	f, err := os.Open(dev)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Primary volume descriptor: sector 16; "CD001" at byte 1, the volume
	// identifier at bytes 40-71, space padded.
	pvd := make([]byte, 72)
	if _, err := f.ReadAt(pvd, 16*2048); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errNotSeed
		}
		return nil, err
	}
	if string(pvd[1:6]) != "CD001" || string(bytes.TrimRight(pvd[40:72], " ")) != config.SeedLabel {
		return nil, errNotSeed
	}
	// Anyone who can attach a disc can write this one: read one bounded file.
	return autounattend.ReadISOFile(f, config.FileName, config.MaxFileSize)
}
