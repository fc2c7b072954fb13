// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package seed

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
)

// ErrUnsafeFile means the seed file is not one only root (on Windows,
// SYSTEM or Administrators) can have written: whoever can write it chooses
// the cluster the node joins.
var ErrUnsafeFile = errors.New("the join seed file could have been written by someone other than root")

// ErrUnparsable means the seed file was still not YAML when the seed
// timeout ended.
var ErrUnparsable = errors.New("the join seed file does not parse")

// TrustedOwner reports who owns the opened seed file f (fi is its Stat)
// and whether that owner is trusted with choosing the node's cluster:
// uid 0 on Linux; SYSTEM, Administrators or TrustedInstaller on Windows.
// Tests that run without root replace it.
var TrustedOwner = trustedOwner

// errChanged: the path named another file by the time it was opened (the
// tooling renamed a new file into place); look again.
var errChanged = errors.New("replaced while it was being opened")

// readSeedFile reads the seed file at path after checking that only root
// could have written it; warning is something to tell the user that does
// not stop the join. A missing file is os.ErrNotExist.
func readSeedFile(path string) (data []byte, warning string, err error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, "", err
	}
	if !fi.Mode().IsRegular() {
		return nil, "", fmt.Errorf("%w: %s is %s, not a regular file; %s", ErrUnsafeFile, path, notRegular(fi.Mode()), fixSeedFile(path))
	}
	if warning, err = checkMode(path, fi); err != nil {
		return nil, "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	if !os.SameFile(fi, opened) {
		return nil, "", errChanged
	}
	who, trusted, err := TrustedOwner(f, opened)
	if err != nil {
		return nil, "", fmt.Errorf("%s: reading its owner: %w", path, err)
	}
	if !trusted {
		return nil, "", fmt.Errorf("%w: %s is owned by %s; %s", ErrUnsafeFile, path, who, fixSeedFile(path))
	}
	data, err = io.ReadAll(io.LimitReader(f, config.MaxFileSize+1))
	if err != nil {
		return nil, "", err
	}
	if len(data) > config.MaxFileSize {
		return nil, "", fmt.Errorf("%s: %w", path, config.ErrTooLarge)
	}
	return data, warning, nil
}

// parses says why data is not yet a seed: empty, or not YAML. Tooling
// that writes the file in place (not to a temporary file renamed into
// place) leaves it so for a moment.
func parses(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("it is empty")
	}
	var keys map[string]any
	return yaml.Unmarshal(data, &keys)
}
