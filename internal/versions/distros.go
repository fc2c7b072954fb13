// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package versions

import (
	"fmt"
	"regexp"
	"strings"
)

// PackagedContainerd is the containerd a Linux distribution release
// installs as its `containerd` package, the one `containerd_source =
// "package"` bakes.
type PackagedContainerd struct {
	// ID and VersionID are os-release's ID and VERSION_ID.
	ID, VersionID string
	// Name is how messages name the release.
	Name string
	// Containerd is the upstream release the package is built from,
	// X.Y.Z; empty when the release's own repositories have no containerd.
	Containerd string
	// Package is the package version read, for the record.
	Package string
}

// PackagedContainerds are the guest OS releases the project's examples
// build, with their distribution's containerd. A distribution updates its
// package within a release (Ubuntu's LTS releases take new upstream
// containerd minors, by its container stack update policy), so the bake
// checks on the guest what it installed; this table is what `packer
// validate` can know before a guest answers.
//
// Sources:
//   - Debian 12: `apt-cache policy containerd` on Debian 12 with
//     bookworm, bookworm-updates and bookworm-security (2026-11):
//     1.6.20~ds1-1+deb12u3 in bookworm/main; `containerd --version`
//     prints 1.6.20~ds1.
//   - Ubuntu 24.04: noble-updates' containerd 2.2.1-0ubuntu1~24.04.3
//     (`containerd --version`: 2.2.1), after the 1.7.27-0ubuntu1~24.04.1 it
//     shipped in 2025; Ubuntu's "Container Stack Updates" SRU exception
//     (documentation.ubuntu.com/project/SRU/reference/exception-Docker-Updates)
//     is the policy that brings new upstream releases to LTS releases.
//   - Rocky Linux 9: no containerd in its BaseOS, AppStream or extras
//     repositories (RHEL 9 ships Podman); `dnf install containerd` finds
//     no match.
var PackagedContainerds = []PackagedContainerd{
	{ID: "debian", VersionID: "12", Name: "Debian 12", Containerd: "1.6.20", Package: "1.6.20~ds1-1+deb12u3"},
	{ID: "ubuntu", VersionID: "24.04", Name: "Ubuntu 24.04", Containerd: "2.2.1", Package: "2.2.1-0ubuntu1~24.04.3"},
	{ID: "rocky", VersionID: "9", Name: "Rocky Linux 9"},
}

// containerdVersionOutput reads the release out of `containerd --version`'s
// third field: "v2.3.7" (upstream's builds), "1.6.20~ds1" (Debian's),
// "2.2.1" (Ubuntu's).
var containerdVersionOutput = regexp.MustCompile(`^v?([0-9]+\.[0-9]+\.[0-9]+)`)

// ContainerdVersionFromOutput is the X.Y.Z release `containerd --version`
// prints, or an error naming what it printed.
func ContainerdVersionFromOutput(out string) (string, error) {
	fields := strings.Fields(out)
	if len(fields) >= 3 {
		if m := containerdVersionOutput.FindStringSubmatch(fields[2]); m != nil {
			return m[1], nil
		}
	}
	return "", fmt.Errorf("`containerd --version` printed %q, which names no release X.Y.Z", strings.TrimSpace(out))
}

// CheckPackagedContainerds is `packer validate`'s check of
// `containerd_source = "package"`, before the guest is known: it refuses
// a Kubernetes release when the package of no release in
// PackagedContainerds is one containerd's matrix lists for its minor, and
// otherwise names, in warn, the releases whose package it does not list
// (the bake refuses those on the guest, CheckPackagedContainerd).
func CheckPackagedContainerds(k KubernetesRelease) (warn string, err error) {
	var ok, refused, all []string
	for _, d := range PackagedContainerds {
		if d.Containerd == "" {
			all = append(all, d.Name+": no containerd package")
			refused = append(refused, d.Name+" (no containerd package)")
			continue
		}
		all = append(all, d.Name+": "+d.Containerd)
		if CheckContainerd(k, ContainerdRelease{Version: d.Containerd}) == nil {
			ok = append(ok, d.Name+"'s containerd "+d.Containerd)
		} else {
			refused = append(refused, d.Name+" (containerd "+d.Containerd+")")
		}
	}
	if len(ok) == 0 {
		return "", packageRefusal(k, "no distribution kubenode-bake knows packages one ("+strings.Join(all, "; ")+")")
	}
	if len(refused) == 0 {
		return "", nil
	}
	return fmt.Sprintf(`containerd_source = "package" with kubernetes_version %s: containerd's Kubernetes support matrix lists %s for Kubernetes %s, `+
		`which %s is; on %s the bake fails once it has read the guest's containerd version`,
		k.Version, listedReleases(k), k.Minor, strings.Join(ok, " and "), strings.Join(refused, " and ")), nil
}

// CheckPackagedContainerd refuses the containerd the distribution's
// package installed on the guest (found, as `containerd --version` names
// it; guest is the OS's name) when containerd's matrix does not list it
// for the Kubernetes release's minor. Its message is packer validate's.
func CheckPackagedContainerd(k KubernetesRelease, found, guest string) error {
	if CheckContainerd(k, ContainerdRelease{Version: found}) == nil {
		return nil
	}
	if guest == "" {
		guest = "the guest"
	}
	return packageRefusal(k, fmt.Sprintf("the containerd package of %s installed containerd %s", guest, found))
}

// packageRefusal is the refusal of the package path: the matrix's
// releases for the minor, why the package is not one, and what to set.
func packageRefusal(k KubernetesRelease, why string) error {
	fix := `set containerd_source = "tarball" and containerd_version to a release it lists`
	if CheckContainerd(k, ContainerdRelease{Version: Defaults.Containerd}) == nil {
		fix += " (the default, " + Defaults.Containerd + ", is one)"
	}
	return fmt.Errorf(`containerd_source = "package" with kubernetes_version %s: containerd's Kubernetes support matrix lists %s for Kubernetes %s, and %s; %s`,
		k.Version, listedReleases(k), k.Minor, why, fix)
}

// listedReleases is the matrix's releases for the minor, "2.3.0+, 2.2.0+".
func listedReleases(k KubernetesRelease) string {
	listed := make([]string, len(k.Containerd))
	for i, r := range k.Containerd {
		listed[i] = r + "+"
	}
	return strings.Join(listed, ", ")
}
