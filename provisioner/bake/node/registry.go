// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package node

import (
	"fmt"
	"strings"
	"unicode"
)

// The hosts.toml files the bake writes, on either OS.
const (
	// HostsHeader starts every hosts.toml the bake writes: a later bake
	// removes the ones it wrote that are no longer configured.
	HostsHeader = "# Written by kubenode-bake:"
	CAFileName  = "ca.crt"
)

// RegistryHost is one registry_mirrors entry with its CA certificates read
// from ca_file.
type RegistryHost struct {
	// Registry, Endpoints, SkipVerify, OverridePath and AllowResolve are
	// the entry's.
	Registry     string
	Endpoints    []string
	SkipVerify   bool
	OverridePath bool
	AllowResolve bool
	// CA is ca_file's content; empty: none.
	CA string
}

// HostsDir is the directory of a registry's hosts.toml under containerd's
// hosts directory: host:port is written host_port_, a name containerd
// looks for first on every OS (Windows allows no colon in a file name).
func HostsDir(registry string) string {
	if i := strings.LastIndex(registry, ":"); i > 0 && !strings.HasSuffix(registry, "]") {
		return registry[:i] + "_" + registry[i+1:] + "_"
	}
	return registry
}

// upstream is a registry's own server, which containerd falls back to
// after the mirrors: Docker Hub's API is at registry-1.docker.io; _default
// has none (containerd uses the image's registry).
func upstream(registry string) string {
	switch registry {
	case "_default":
		return ""
	case "docker.io":
		return "https://registry-1.docker.io"
	}
	return "https://" + registry
}

// Unverified reports whether an endpoint's answers are not authenticated:
// plain http://, or TLS with skip_verify.
func Unverified(endpoint string, skipVerify bool) bool {
	return skipVerify || strings.HasPrefix(strings.ToLower(endpoint), "http://")
}

// Capabilities is what containerd trusts an endpoint with: pulls by digest
// (checked against the digest whatever answers) and tag resolution, which
// only an authenticated endpoint, or one the entry's allow_resolve vouches
// for, gets: an unauthenticated answer to a tag could name any image.
func Capabilities(m RegistryHost, endpoint string) []string {
	if Unverified(endpoint, m.SkipVerify) && !m.AllowResolve {
		return []string{"pull"}
	}
	return []string{"pull", "resolve"}
}

// HostsTOML renders a registry's hosts.toml: the registry as its server,
// then each mirror as a host trusted to pull, and to resolve tags when
// Capabilities allows it (a private mirror, in containerd's table), with
// the CA file at caPathInGuest ("": none), skip_verify and override_path.
func HostsTOML(m RegistryHost, caPathInGuest string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s the registry host configuration of %s, which containerd reads from its config_path.\n", HostsHeader, m.Registry)
	if s := upstream(m.Registry); s != "" {
		fmt.Fprintf(&b, "server = %s\n", TOMLBasic(s))
	}
	for _, e := range m.Endpoints {
		caps := Capabilities(m, e)
		for i, c := range caps {
			caps[i] = TOMLBasic(c)
		}
		fmt.Fprintf(&b, "\n[host.%s]\n  capabilities = [%s]\n", TOMLBasic(e), strings.Join(caps, ", "))
		if caPathInGuest != "" {
			fmt.Fprintf(&b, "  ca = %s\n", TOMLBasic(caPathInGuest))
		}
		if m.SkipVerify {
			b.WriteString("  skip_verify = true\n")
		}
		if m.OverridePath {
			b.WriteString("  override_path = true\n")
		}
	}
	return b.String()
}

// CRIRegistryConfig is the CRI plugin's registry table for a containerd
// config version: the hosts directory, set even with no mirror so that a
// hosts.toml dropped there later is read.
func CRIRegistryConfig(version int, configPath string) string {
	if version == 3 {
		return "\n[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = " + configPath + "\n"
	}
	return "\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = " + configPath + "\n"
}

// ContainerdImports has containerd read the *.toml files of a directory
// after config.toml, as image-builder's config does: site settings go there
// without editing the bake's file.
func ContainerdImports(pattern string) string { return "imports = [" + pattern + "]\n" }

// TOMLBasic quotes any value as a TOML basic string.
func TOMLBasic(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case unicode.IsControl(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
