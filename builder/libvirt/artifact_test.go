// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/packer/registry/image"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/registrytest"
)

func TestArtifactReportsTheImageFileToHCPPacker(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	facts := ImageFacts{OSFamily: "linux", SeedFlavor: "cloud-init", Firmware: "bios"}
	rec := &baked.Record{
		Facts: baked.Facts{Kubernetes: "v1.33.13", Containerd: "1.7.24", Bootstrap: "cluster-api"},
		OS:    baked.GuestOS{ID: "debian", Version: "12", Name: "Debian GNU/Linux 12 (bookworm)"},
	}
	a := &Artifact{
		dir:    "output-debian",
		files:  []string{"output-debian/packer-debian.qcow2", "output-debian/serial.log"},
		source: "/images/debian-12-base.qcow2",
		labels: imageLabels(facts, rec),
	}

	got := registrytest.Images(t, a)

	require.Len(t, got, 1)
	assert.Equal(t, image.Image{
		ImageID:        filepath.Join(wd, "output-debian/packer-debian.qcow2"),
		ProviderName:   "qemu",
		ProviderRegion: filepath.Join(wd, "output-debian"),
		SourceImageID:  "/images/debian-12-base.qcow2",
		Labels: map[string]string{
			"os_family":          "linux",
			"os_id":              "debian",
			"os_version":         "12",
			"os_name":            "Debian GNU/Linux 12 (bookworm)",
			"seed_flavor":        "cloud-init",
			"firmware":           "bios",
			"kubernetes_version": "v1.33.13",
			"containerd_version": "1.7.24",
			"bootstrap":          "cluster-api",
		},
	}, got[0])
}

func TestArtifactReportsAKeptVolumeToHCPPacker(t *testing.T) {
	facts := ImageFacts{OSFamily: "windows", OSVersion: "2022", OSEdition: "datacenter-core", Firmware: "uefi"}
	a := &Artifact{pool: "images", volume: "win2022", uri: "qemu+ssh://builder@hv1/system", labels: imageLabels(facts, nil)}

	got := registrytest.Images(t, a)

	require.Len(t, got, 1)
	assert.Equal(t, image.Image{
		ImageID:        "images/win2022",
		ProviderName:   "libvirt",
		ProviderRegion: "qemu+ssh://builder@hv1/system",
		Labels: map[string]string{
			"os_family":  "windows",
			"os_version": "2022",
			"os_edition": "datacenter-core",
			"firmware":   "uefi",
		},
	}, got[0])
}

func TestArtifactWithoutAnImageReportsNothingToHCPPacker(t *testing.T) {
	assert.Nil(t, registrytest.Images(t, &Artifact{}))
	// Packer tests the state against nil: a typed nil would pass as an image.
	v := (&Artifact{}).State(image.ArtifactStateURI)
	assert.True(t, v == nil, "State returned %#v, not an untyped nil", v)
}
