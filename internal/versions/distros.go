// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package versions

import (
	"fmt"
	"math"
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

// packageRelease is containerd_version with containerd_source =
// "package": the upstream containerd release the distribution's package
// is built from, a minor X.Y or a release X.Y.Z, without a v.
var packageRelease = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))?$`)

// CheckPackagedContainerds is `packer validate`'s check of
// `containerd_source = "package"`, before the guest is known. declared is
// containerd_version, the containerd release the user says the guest's
// package is built from ("2.2" or "2.2.1"; "" when unset): it is refused
// when containerd's Kubernetes support matrix does not list it for the
// Kubernetes minor (a minor alone passes when the matrix lists the minor;
// the bake checks the guest's release, CheckPackagedContainerd). Unset, the
// package path passes only when every distribution in
// PackagedContainerds that packages containerd packages a release the
// matrix lists, and is refused otherwise, naming each one's release and
// whether the matrix lists it.
func CheckPackagedContainerds(k KubernetesRelease, declared string) error {
	if declared != "" {
		if !packageRelease.MatchString(declared) {
			return fmt.Errorf(`containerd_version: with containerd_source = "package" it names the containerd release the distribution's package is built from, `+
				`X.Y or X.Y.Z without a v; %q is neither`, declared)
		}
		if matrixLists(k, declared) {
			return nil
		}
		return packageRefusal(k, "containerd_version "+declared, declared+" is not one",
			"build on a distribution whose containerd package is one of those and set containerd_version to its release")
	}
	var known []string
	all := true
	for _, d := range PackagedContainerds {
		switch {
		case d.Containerd == "":
			known = append(known, d.Name+": no containerd package")
		case matrixLists(k, d.Containerd):
			known = append(known, d.Name+": "+d.Containerd)
		default:
			known = append(known, d.Name+": "+d.Containerd+", not supported by "+k.Minor)
			all = false
		}
	}
	if all {
		return nil
	}
	return packageRefusal(k, "containerd_version unset", "not every distribution kubenode-bake knows packages one ("+strings.Join(known, "; ")+")",
		"set containerd_version to the containerd release your distribution's package is built from (X.Y or X.Y.Z; the bake checks it on the guest)")
}

// matrixLists says whether containerd's Kubernetes support matrix lists
// containerd release v (X.Y.Z) for the Kubernetes release's minor; for a
// minor alone (X.Y), whether it lists some release of that minor.
func matrixLists(k KubernetesRelease, v string) bool {
	if p := parseVersion(v); len(p) == 2 {
		v = fmt.Sprintf("%d.%d.%d", p[0], p[1], math.MaxInt32)
	}
	return CheckContainerd(k, ContainerdRelease{Version: v}) == nil
}

// CheckPackagedContainerd refuses the containerd the distribution's
// package installed on the guest (found, as `containerd --version` names
// it; guest is the OS's name): when containerd_version declared a release
// of another minor (declared; "" when unset), and when containerd's
// matrix does not list it for the Kubernetes release's minor (packer
// validate's message).
func CheckPackagedContainerd(k KubernetesRelease, declared, found, guest string) error {
	if guest == "" {
		guest = "the guest"
	}
	if declared != "" && minor(declared) != minor(found) {
		return fmt.Errorf(`containerd_version %s with containerd_source = "package": the containerd package of %s installed containerd %s, a release of %s, not %s; `+
			`set containerd_version to %s, the release this distribution's package is built from (packer validate then holds it to containerd's Kubernetes support matrix), `+
			`or build on a distribution whose containerd package is of %s`,
			declared, guest, found, minor(found), minor(declared), minor(found), minor(declared))
	}
	if CheckContainerd(k, ContainerdRelease{Version: found}) == nil {
		return nil
	}
	ctr := ""
	if declared != "" {
		ctr = "containerd_version " + declared
	}
	return packageRefusal(k, ctr, fmt.Sprintf("the containerd package of %s installed containerd %s", guest, found), "")
}

// packageRefusal is the refusal of the package path: the matrix's
// releases for the minor, why the package is not one, and what to set.
// ctr says what containerd_version is ("" leaves it out); fix comes before
// the tarball path.
func packageRefusal(k KubernetesRelease, ctr, why, fix string) error {
	tarball := `set containerd_source = "tarball" and containerd_version to a release it lists`
	if CheckContainerd(k, ContainerdRelease{Version: Defaults.Containerd}) == nil {
		tarball += " (the default, " + Defaults.Containerd + ", is one)"
	}
	if fix != "" {
		tarball = fix + ", or " + tarball
	}
	if ctr != "" {
		ctr = " and " + ctr
	}
	return fmt.Errorf(`containerd_source = "package" with kubernetes_version %s%s: containerd's Kubernetes support matrix lists %s for Kubernetes %s, and %s; %s`,
		k.Version, ctr, listedReleases(k), k.Minor, why, tarball)
}

// listedReleases is the matrix's releases for the minor, "2.3.0+, 2.2.0+".
func listedReleases(k KubernetesRelease) string {
	listed := make([]string, len(k.Containerd))
	for i, r := range k.Containerd {
		listed[i] = r + "+"
	}
	return strings.Join(listed, ", ")
}
