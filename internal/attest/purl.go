// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package attest

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

// Package URLs (github.com/package-url/purl-spec): the names scanners
// match against vulnerability data.

// artifactModules are the Go modules the artifacts are built from, by
// artifact name: their purl is pkg:golang/<module>@<version>. An artifact
// not listed (cloudbase-init, a Python program in an MSI) gets none.
var artifactModules = map[string]string{
	"kubelet":         "k8s.io/kubernetes",
	"kubeadm":         "k8s.io/kubernetes",
	"kubectl":         "k8s.io/kubernetes",
	"kube-log-runner": "k8s.io/kubernetes",
	"containerd":      "github.com/containerd/containerd",
	"runc":            "github.com/opencontainers/runc",
	"cni-plugins":     "github.com/containernetworking/plugins",
	"crictl":          "sigs.k8s.io/cri-tools",
	"joiner":          "github.com/kubenode/packer-plugin-kubenode",
}

var semver = regexp.MustCompile(`^v?(\d+)\.\d+\.\d+`)

// goPURL is the purl of an artifact built from a Go module, "" when it
// has none or its version is not a release's. A module of major version 2
// or later has the major in its path (github.com/containerd/containerd/v2).
func goPURL(name, version string) string {
	module, ok := artifactModules[name]
	m := semver.FindStringSubmatch(version)
	if !ok || m == nil {
		return ""
	}
	if major, _ := strconv.Atoi(m[1]); major >= 2 {
		module += "/v" + m[1]
	}
	return "pkg:golang/" + escape(module, "/") + "@" + escape("v"+strings.TrimPrefix(version, "v"), "")
}

// ociPURL is the purl of a container image: its repository's last path
// component, its digest, and the repository and tag as qualifiers.
func ociPURL(ref, digest string) string {
	if digest == "" {
		return ""
	}
	repo, tag := splitTag(ref)
	q := [][2]string{{"repository_url", repo}}
	if tag != "" {
		q = append(q, [2]string{"tag", tag})
	}
	return "pkg:oci/" + escape(strings.ToLower(repo[strings.LastIndex(repo, "/")+1:]), "") + "@" + escape(digest, "") + qualifiers(q)
}

// splitTag splits an image reference into its repository and tag (""
// without one); a digest is dropped.
func splitTag(ref string) (repo, tag string) {
	ref, _, _ = strings.Cut(ref, "@")
	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		return ref[:colon], ref[colon+1:]
	}
	return ref, ""
}

// osPackagePURL is the purl of an OS package (pkg:deb or pkg:rpm, the
// distribution's ID as namespace), "" when the type or distribution is
// unknown. An rpm's epoch is a qualifier; a deb's stays in its version.
func osPackagePURL(typ string, os OS, p baked.Package) string {
	if (typ != "deb" && typ != "rpm") || os.ID == "" {
		return ""
	}
	version := p.Version
	var q [][2]string
	if typ == "rpm" {
		if epoch, rest, ok := strings.Cut(version, ":"); ok {
			version = rest
			q = append(q, [2]string{"epoch", epoch})
		}
	}
	if p.Arch != "" {
		q = append(q, [2]string{"arch", p.Arch})
	}
	q = append(q, [2]string{"distro", os.ID + "-" + os.Version})
	if p.Source != "" {
		q = append(q, [2]string{"upstream", p.Source})
	}
	return "pkg:" + typ + "/" + escape(strings.ToLower(os.ID), "") + "/" + escape(p.Name, "") + "@" + escape(version, "") + qualifiers(q)
}

// qualifiers are the purl's qualifiers, sorted by key.
func qualifiers(q [][2]string) string {
	slices.SortFunc(q, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var parts []string
	for _, kv := range q {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+escape(kv[1], "/:"))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "?" + strings.Join(parts, "&")
}

// escape percent-encodes s but for unreserved characters and keep.
func escape(s, keep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~"+keep, c) >= 0 {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c)|0x100, 16)[1:]))
		}
	}
	return b.String()
}
