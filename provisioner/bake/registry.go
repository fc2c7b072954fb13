// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

var registryHostRE = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$|^\[[0-9a-f:.]+\](:[0-9]{1,5})?$`)

// prepareRegistryMirrors checks registry_mirrors, naming the key of every
// problem.
func (c *Config) prepareRegistryMirrors() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	seen := map[string]int{}
	for i, m := range c.RegistryMirrors {
		key := fmt.Sprintf("registry_mirrors[%d]", i)
		switch {
		case m.Registry == "":
			add("%s.registry: required: the registry's host as image references name it (docker.io, registry.k8s.io) or _default", key)
		case m.Registry != "_default" && !registryHostRE.MatchString(m.Registry):
			add("%s.registry: %q is not a registry host (lowercase name or IP address, optional :port, no scheme or path) or _default", key, m.Registry)
		}
		if j, dup := seen[m.Registry]; dup && m.Registry != "" {
			add("%s.registry: %q is configured already by registry_mirrors[%d]; give each registry one entry with all its endpoints", key, m.Registry, j)
		} else {
			seen[m.Registry] = i
		}
		if len(m.Endpoints) == 0 {
			add("%s.endpoints: required: at least one mirror URL (https://mirror.example.com)", key)
		}
		for j, e := range m.Endpoints {
			if err := checkEndpoint(e); err != nil {
				add("%s.endpoints[%d]: %v", key, j, err)
			}
			if slices.Contains(m.Endpoints[:j], e) {
				add("%s.endpoints[%d]: %q is listed twice", key, j, e)
			}
		}
		if m.CAFile != "" {
			if _, err := readCA(m.CAFile); err != nil {
				add("%s.ca_file: %v", key, err)
			}
		}
	}
	return errs
}

// registryMirrorWarnings names the mirrors whose answers are not
// authenticated (http://, skip_verify): anyone between the node and such a
// mirror can serve a tag as an image of their choosing, so they only pull
// by digest unless allow_resolve says otherwise.
func (c *Config) registryMirrorWarnings() []string {
	var out []string
	for i, m := range c.RegistryMirrors {
		key := fmt.Sprintf("registry_mirrors[%d]", i)
		var plain []string
		for j, e := range m.Endpoints {
			if node.Unverified(e, false) {
				plain = append(plain, fmt.Sprintf("endpoints[%d] (%s)", j, e))
			}
		}
		var what string
		switch {
		case m.SkipVerify:
			what = key + ".skip_verify: the TLS certificates of " + key + ".endpoints are not checked"
		case len(plain) > 0:
			what = key + "." + strings.Join(plain, ", "+key+".") + ": plain HTTP"
		default:
			continue
		}
		if m.AllowResolve {
			out = append(out, what+", and allow_resolve lets the mirror resolve tags: anyone on the way to it can answer a tag with another image")
		} else {
			out = append(out, what+": the mirror is trusted to pull by digest only (capabilities = [\"pull\"]), tags are resolved by the verified endpoints or the registry itself; "+
				"use https:// with ca_file, or set "+key+".allow_resolve = true for a mirror of a registry only it reaches")
		}
	}
	return out
}

// checkEndpoint accepts an absolute http(s) URL with a host, no user
// information, query or fragment.
func checkEndpoint(e string) error {
	u, err := url.Parse(e)
	switch {
	case err != nil || node.OneLine(e) != "" || strings.ContainsAny(e, " \"'\\`$"):
		return fmt.Errorf("%q is not a URL", e)
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%q: want an https:// or http:// URL", e)
	case u.Host == "":
		return fmt.Errorf("%q has no host", e)
	case u.User != nil:
		return fmt.Errorf("%q holds user information: containerd's hosts.toml takes no credentials (the kubelet passes the Pod's image pull secrets)", e)
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(e, "?"):
		return fmt.Errorf("%q has a query or fragment: give scheme, host, port and path only", e)
	}
	return nil
}

// readCA reads a PEM file of CA certificates: at least one, all parse.
func readCA(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return "", fmt.Errorf("%s holds a %s block: give CA certificates only (PEM, BEGIN CERTIFICATE)", file, block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return "", fmt.Errorf("%s: certificate %d: %w", file, n+1, err)
		}
		n++
	}
	if n == 0 {
		return "", fmt.Errorf("%s holds no PEM certificate (BEGIN CERTIFICATE)", file)
	}
	return string(data), nil
}

// registryHosts reads the mirrors' CA files.
func (c *Config) registryHosts() ([]node.RegistryHost, error) {
	var out []node.RegistryHost
	for i, m := range c.RegistryMirrors {
		h := node.RegistryHost{Registry: m.Registry, Endpoints: m.Endpoints, SkipVerify: m.SkipVerify, OverridePath: m.OverridePath, AllowResolve: m.AllowResolve}
		if m.CAFile != "" {
			ca, err := readCA(m.CAFile)
			if err != nil {
				return nil, fmt.Errorf("registry_mirrors[%d].ca_file: %w", i, err)
			}
			h.CA = ca
		}
		out = append(out, h)
	}
	return out, nil
}
