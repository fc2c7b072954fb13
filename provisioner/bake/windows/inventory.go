// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
)

// inventoryDirs are the folders whose binaries the inventory hashes:
// those the bake installs into (the kubelet's and the joiner's, containerd's
// with crictl, the CNI plugins').
var inventoryDirs = []string{units.WindowsKubeDir, containerdDir, cniBinDir}

// inventoryQuery is the short script that lists the image's Windows
// features and the binaries the bake installed, with their sha256.
func inventoryQuery() string {
	return templates.RenderString("inventory.lf.ps1.tmpl", struct{ Dirs []string }{inventoryDirs})
}

var (
	featureLine = regexp.MustCompile(`^kubenode-feature: (\S+)$`)
	fileLine    = regexp.MustCompile(`^kubenode-file: ([0-9a-f]{64}) (.+)$`)
)

// parseInventory reads inventoryQuery's output: the features sorted, the
// files in the order listed.
func parseInventory(out string) baked.Inventory {
	var inv baked.Inventory
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if m := featureLine.FindStringSubmatch(line); m != nil && !slices.Contains(inv.Features, m[1]) {
			inv.Features = append(inv.Features, m[1])
		} else if m := fileLine.FindStringSubmatch(line); m != nil {
			inv.Files = append(inv.Files, baked.File{Path: m[2], SHA256: m[1]})
		}
	}
	slices.Sort(inv.Features)
	return inv
}

// inventory asks the guest for the image's Windows features and the
// binaries the bake installed, for the image's SBOM. Like joinerVersion,
// it runs before sysprep.
func (r *guest) inventory(ctx context.Context) (baked.Inventory, error) {
	code, out, err := r.Exec(ctx, powershellQuery(queryInventory, inventoryQuery()))
	inv := parseInventory(out)
	if err != nil || code != 0 || len(inv.Features) == 0 || len(inv.Files) == 0 {
		err := fmt.Errorf("asking the guest for its Windows features and the binaries' sha256, for the image's SBOM: exit %d, %v, %d features, %d files: %s",
			code, err, len(inv.Features), len(inv.Files), strings.TrimSpace(out))
		r.UI.Error(err.Error())
		return baked.Inventory{}, err
	}
	return inv, nil
}
