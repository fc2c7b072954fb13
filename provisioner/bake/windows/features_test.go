// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
)

// Calico's BGP features go in with Containers, and the restart they ask
// for is the flow's own, before containerd and the kubelet are installed.
func TestWindowsFeaturesInstallWithContainersAndRestart(t *testing.T) {
	fastRestart(t)
	p := basePlan(t)
	p.WindowsFeatures = []string{"RemoteAccess", "RSAT-RemoteAccess-PowerShell", "Routing"}
	g := guesttest.NewWindows()
	require.NoError(t, runErr(g, guesttest.NewUI(), p, realUploads(t, p)))
	assert.Equal(t, stepsWithRestart, g.Steps(), "a restart right after containers-feature")
	for _, f := range append([]string{"Containers"}, p.WindowsFeatures...) {
		assert.True(t, g.Features[f], f)
	}

	// A name this Windows lacks fails the bake there, naming the key.
	p.WindowsFeatures = []string{"Routin"}
	g = guesttest.NewWindows()
	err := runErr(g, guesttest.NewUI(), p, realUploads(t, p))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "windows_features: this Windows has no feature named Routin")
	assert.NotContains(t, g.Steps(), "containerd")
}

func TestWindowsFeaturesAreChecked(t *testing.T) {
	var msgs []string
	for _, err := range CheckWindowsFeatures([]string{"Routing", "", "Remote Access", "CONTAINERS", "Hyper-V-PowerShell", "routing"}) {
		msgs = append(msgs, err.Error())
	}
	assert.Equal(t, []string{
		`windows_features[1]: "" is not a Windows feature name (letters, digits, '-', '_' and '.', as Get-WindowsFeature lists them)`,
		`windows_features[2]: "Remote Access" is not a Windows feature name (letters, digits, '-', '_' and '.', as Get-WindowsFeature lists them)`,
		`windows_features[3]: CONTAINERS is installed in every image; remove it`,
		`windows_features[4]: Hyper-V-PowerShell comes with hyperv (auto, on or off); remove it and set hyperv`,
		`windows_features[5]: "routing" is listed twice`,
	}, msgs)
}
