// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build windows

package seed

import (
	"fmt"
	"strings"

	"golang.org/x/sys/windows"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
)

// findSeedOnce asks each drive letter for its volume label; Windows' CD
// file system finds joiner.yaml case-insensitively.
func findSeedOnce(p config.Paths) ([]byte, string, error) {
	mask, err := windows.GetLogicalDrives()
	if err != nil {
		return nil, "", err
	}
	var seen []string
	for i := 0; i < 26; i++ {
		if mask&(1<<i) == 0 {
			continue
		}
		root := string(rune('A'+i)) + `:\`
		label := make([]uint16, windows.MAX_PATH+1)
		rootp, _ := windows.UTF16PtrFromString(root)
		if err := windows.GetVolumeInformation(rootp, &label[0], uint32(len(label)), nil, nil, nil, nil, 0); err != nil {
			continue // an empty CD drive, a disconnected share
		}
		name := windows.UTF16ToString(label)
		seen = append(seen, root+"="+name)
		if !strings.EqualFold(name, config.SeedLabel) {
			continue
		}
		data, err := config.ReadFile(root + config.FileName)
		if err != nil {
			return nil, "", err
		}
		return data, root, nil
	}
	return nil, "", fmt.Errorf("no drive is labelled %s (drives: %s)", config.SeedLabel, strings.Join(seen, ", "))
}
