// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/fetch"
)

// fetchOptions are the configuration's keys the downloads take.
func (c *Config) fetchOptions() fetch.Options {
	return fetch.Options{
		Artifacts: c.Artifacts, Dir: c.ArtifactsDir, Checksums: c.ArtifactChecksums,
		Mirrors: c.DownloadMirrors, TrustHTTPMirrorChecksums: c.TrustHTTPMirrorChecksums,
		CacheDir:  c.DownloadCacheDir,
		HTTPProxy: c.HTTPProxy, HTTPSProxy: c.HTTPSProxy, NoProxy: c.NoProxy,
	}
}

// prepareDownloads checks the keys of the artifacts and their downloads,
// sets their defaults, and refuses the planned downloads a plain-HTTP
// mirror's checksum files would be the only proof of. Call it after the
// other defaults are set: it plans the build.
func (c *Config) prepareDownloads() []error {
	o := c.fetchOptions()
	errs := o.Prepare()
	mirrors, mirrorErrs := fetch.CleanMirrors(c.DownloadMirrors)
	c.ArtifactChecksums, c.DownloadCacheDir, c.DownloadMirrors = o.Checksums, o.CacheDir, mirrors
	if len(mirrorErrs) > 0 {
		return append(errs, mirrorErrs...)
	}
	if err := c.fetchOptions().CheckMirrorProof(c.plannedDownloads()); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// plannedDownloads are the artifacts the build downloads, as far as the
// configuration tells: guest_os_type's (a Linux guest's when it is unset;
// Resolve checks a Windows guest's), the OS package's own list, less those
// given as local files.
func (c *Config) plannedDownloads() []versions.Artifact {
	guest := "linux"
	if c.GuestOS == "windows" {
		guest = "windows"
	}
	img, err := c.nodeImage(guest, versions.WindowsRelease{})
	if err != nil {
		return nil // validateVersions and the other checks say why
	}
	arts := img.Artifacts
	var out []versions.Artifact
	for _, a := range arts {
		if local, err := c.fetchOptions().Local(a); a.URL != "" && local == "" && err == nil {
			out = append(out, a)
		}
	}
	return out
}
