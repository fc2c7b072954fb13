// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// packagePrefix starts each line packagesCommand prints: the guest's
// other output (a login banner, a warning) is not a package.
const packagePrefix = "kubenode-package\t"

// packagesCommand lists the guest's OS packages from its package
// database, one a line: the prefix, the package type (deb or rpm), an
// installed flag (dpkg's status abbreviation; "ii" for rpm, which lists
// installed packages only), name, version, architecture and source
// package. dpkg-query is asked first:
// an rpm binary on a Debian guest has no database of its own.
const packagesCommand = `if command -v dpkg-query >/dev/null 2>&1; then ` +
	`dpkg-query -W -f='kubenode-package\tdeb\t${db:Status-Abbrev}\t${Package}\t${Version}\t${Architecture}\t${source:Package}\n'; ` +
	`else rpm -qa --qf 'kubenode-package\trpm\tii\t%{NAME}\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\t%{ARCH}\t%{SOURCERPM}\n'; fi`

// askPackages asks the guest for its installed OS packages, for the
// image's SBOM: after the bake's steps, so the list is the image's.
func askPackages(ctx context.Context, r *remote.Remote) (string, []baked.Package, error) {
	code, out, err := r.Exec(ctx, packagesCommand)
	typ, pkgs := parsePackages(out)
	if err != nil || code != 0 || len(pkgs) == 0 {
		return "", nil, fmt.Errorf("asking the guest for its packages for the image's SBOM (dpkg-query -W, or rpm -qa): exit %d, %v, %d packages: %s",
			code, err, len(pkgs), lastLines(out, 5))
	}
	return typ, pkgs, nil
}

// parsePackages reads packagesCommand's output: installed packages only
// (dpkg also lists removed ones whose configuration files remain), not
// rpm's gpg-pubkey entries (imported signing keys), sorted by name and
// architecture, and their type (deb or rpm).
func parsePackages(out string) (string, []baked.Package) {
	var pkgs []baked.Package
	typ := ""
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), packagePrefix)
		if !ok {
			continue
		}
		typ, rest, _ = strings.Cut(rest, "\t")
		f := strings.Split(rest, "\t")
		if len(f) < 4 || len(f[0]) < 2 || f[0][1] != 'i' || f[1] == "" || f[1] == "gpg-pubkey" {
			continue
		}
		p := baked.Package{Name: f[1], Version: f[2], Arch: none(f[3])}
		if len(f) > 4 {
			p.Source = sourceName(none(f[4]))
		}
		if p.Source == p.Name {
			p.Source = ""
		}
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, b baked.Package) int {
		return strings.Compare(a.Name+"\x00"+a.Arch, b.Name+"\x00"+b.Arch)
	})
	if len(pkgs) == 0 {
		return "", nil
	}
	return typ, slices.Compact(pkgs)
}

// none is rpm's "(none)" as empty.
func none(s string) string {
	if s == "(none)" {
		return ""
	}
	return s
}

// sourceName is the source package's name: dpkg's as it is, an rpm's
// SOURCERPM (name-version-release.src.rpm) without its version.
func sourceName(s string) string {
	base, ok := strings.CutSuffix(s, ".src.rpm")
	if !ok {
		return s
	}
	for range 2 { // -release, then -version
		if i := strings.LastIndex(base, "-"); i > 0 {
			base = base[:i]
		}
	}
	return base
}

// runcCommand prints the runc version (`runc version 1.3.0` on its first
// line); runc is in an sbin directory, which a user's PATH may lack.
const runcCommand = `PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin" runc --version | awk 'NR == 1 { print $3 }'`

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
