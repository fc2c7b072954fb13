// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package version holds the plugin's version, reported to Packer by main.go.
package version

import "github.com/hashicorp/packer-plugin-sdk/version"

var (
	// Version is the semantic version of the plugin, set at release time.
	Version = "0.1.0"
	// VersionPrerelease marks development builds ("dev"); empty for releases.
	VersionPrerelease = "dev"
	// VersionMetadata is optional build metadata.
	VersionMetadata = ""

	// PluginVersion is what the plugin set reports to Packer.
	PluginVersion = version.NewPluginVersion(Version, VersionPrerelease, VersionMetadata)
)
