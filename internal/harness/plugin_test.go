// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package harness_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
)

// TestParsePackerVersion: the harness installs the plugin with `packer
// plugins install --path` from Packer 1.10.0 on, and as `packer init`
// would before (1.9.4, the last MPL-2.0 release, has no --path).
func TestParsePackerVersion(t *testing.T) {
	for _, tc := range []struct {
		out      string
		want     [3]int
		fromPath bool
	}{
		{"Packer v1.9.4\n", [3]int{1, 9, 4}, false},
		{"Packer v1.9.5\n\nYour version of Packer is out of date! The latest version\nis 1.16.0.\n", [3]int{1, 9, 5}, false},
		{"Packer v1.10.0\n", [3]int{1, 10, 0}, true},
		{"Packer v1.16.0\n", [3]int{1, 16, 0}, true},
		{"Packer v1.11.0-dev\n", [3]int{1, 11, 0}, true},
		{"Packer v2.0.0\n", [3]int{2, 0, 0}, true},
		{"Packer v0.12.3\n", [3]int{0, 12, 3}, false},
	} {
		v, err := harness.ParsePackerVersion(tc.out)
		require.NoError(t, err, "%q", tc.out)
		assert.Equal(t, tc.want, [3]int{v.Major, v.Minor, v.Patch}, "%q", tc.out)
		assert.Equal(t, tc.fromPath, v.InstallsFromPath(), "%q: has packer plugins install --path", tc.out)
		assert.Equal(t, strings.SplitN(tc.out, "\n", 2)[0], v.String())
	}
	for _, bad := range []string{"", "1.9.4", "Packer 1.9.4", "Packer v1.9", "Terraform v1.9.4", "Packer v1.9.4 (abc)"} {
		_, err := harness.ParsePackerVersion(bad)
		assert.Error(t, err, "%q", bad)
	}
}
