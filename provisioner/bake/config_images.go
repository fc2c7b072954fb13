// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:generate bash ../../scripts/struct-markdown.sh

package bake

// The nested blocks of `images` and `registry_mirrors`; their logic is in
// images.go and registry.go.

// ImageArchive is a container image archive preloaded into containerd's
// `k8s.io` namespace (the one the kubelet uses) at bake time.
type ImageArchive struct {
	// A local image archive: a plain (not compressed) tar written by
	// `docker save` (its `manifest.json` names the images) or an OCI image
	// layout tar (`skopeo copy ... oci-archive:`, `ctr images export`),
	// whose `index.json` names them with the `io.containerd.image.name`
	// annotation or a full reference in `org.opencontainers.image.ref.name`.
	// An archive that names no image is refused.
	Path string `mapstructure:"path" required:"true"`
	// The archive's sha256 (64 hex digits, optionally prefixed `sha256:`),
	// checked on this machine before anything is uploaded and again on the
	// guest.
	SHA256 string `mapstructure:"sha256" required:"true"`
}

// RegistryMirror is containerd's registry host configuration for one
// registry: a hosts.toml in containerd's hosts directory
// (https://github.com/containerd/containerd/blob/main/docs/hosts.md).
type RegistryMirror struct {
	// The registry the mirrors stand in for, as image references name it:
	// a host with an optional port (`docker.io`, `registry.k8s.io`,
	// `registry.example.com:5000`), or `_default` for every registry
	// without a configuration of its own.
	Registry string `mapstructure:"registry" required:"true"`
	// Mirror URLs (`https://` or `http://`, host and optional port and
	// path), tried in this order for pulls and tag resolution; the
	// registry itself comes after them (`_default`: the image's own
	// registry).
	Endpoints []string `mapstructure:"endpoints" required:"true"`
	// A local PEM file with the CA certificates the mirrors' TLS
	// certificates are checked against; it is written beside the
	// hosts.toml on the guest.
	CAFile string `mapstructure:"ca_file"`
	// Do not verify the mirrors' TLS certificates. Default false.
	SkipVerify bool `mapstructure:"skip_verify"`
	// The endpoints' paths are the registry API's root as they are
	// (containerd otherwise appends `/v2`): for mirrors served under a
	// path of their own. Default false.
	OverridePath bool `mapstructure:"override_path"`
	// Let the `http://` endpoints, and every endpoint with `skip_verify`,
	// resolve tags too. Default false: such a mirror is only trusted to
	// pull by digest (`capabilities = ["pull"]`), since anyone on the path
	// could answer a tag with an image of their choosing; tags are resolved
	// by the verified endpoints or the registry itself. Set it for a
	// mirror of a registry the node cannot reach, whose tags only that
	// mirror resolves.
	AllowResolve bool `mapstructure:"allow_resolve"`
}
