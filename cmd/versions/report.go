// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// upstream is one project of the version table: the Go modules the proxy
// serves its releases as, and the table's rows of it.
type upstream struct {
	name    string
	modules []string
	// prefix is "v" where the table writes the project's versions with a v.
	prefix string
	// byMajor: the rows are major series (vX), else minor series (X.Y).
	byMajor bool
	rows    []row
	// def is the release installed when defKey is unset; "" for none.
	def, defKey string
	// patchesOnly: a row's newer minors are not news (each cri-tools row
	// goes with its own Kubernetes minor).
	patchesOnly bool
}

// row is one row of the table, by its series.
type row struct {
	series string // the row's minor (or major), as the table writes it
	holds  string // the release the row installs; "" for any release of the series
	note   string
	eol    string // end of life, YYYY-MM-DD; "" where the table records none
	lts    bool
}

// upstreams are the table's projects, each with the modules whose
// versions are its releases (containerd 1.x and 2.x are two modules).
func upstreams() []upstream {
	k8s := upstream{name: "kubernetes", modules: []string{"k8s.io/kubernetes"}, prefix: "v",
		def: versions.Defaults.Kubernetes, defKey: "kubernetes_version"}
	for _, r := range versions.KubernetesMinors {
		k8s.rows = append(k8s.rows, row{series: r.Minor, eol: r.EndOfLife})
	}
	ctr := upstream{name: "containerd", prefix: "", def: versions.Defaults.Containerd, defKey: "containerd_version"}
	for _, r := range versions.ContainerdMinors {
		ctr.rows = append(ctr.rows, row{series: r.Minor, eol: r.EndOfLife, lts: r.LTS})
		if m := containerdModule(r.Minor); !slices.Contains(ctr.modules, m) {
			ctr.modules = append(ctr.modules, m)
		}
	}
	runc := upstream{name: "runc", modules: []string{"github.com/opencontainers/runc"}, prefix: "v"}
	for _, r := range versions.ContainerdMinors {
		i := slices.IndexFunc(runc.rows, func(x row) bool { return x.holds == r.RuncVersion })
		if i < 0 {
			runc.rows = append(runc.rows, row{series: series(r.RuncVersion, "v", false), holds: r.RuncVersion, note: "with containerd " + r.Minor})
			continue
		}
		runc.rows[i].note += ", " + r.Minor
	}
	slices.SortStableFunc(runc.rows, func(a, b row) int { return versions.CompareVersions(a.holds, b.holds) })
	cni := upstream{name: "cni plugins", modules: []string{"github.com/containernetworking/plugins"}, prefix: "v", byMajor: true,
		def: versions.Defaults.CNIPlugins, defKey: "cni_plugins_version"}
	for _, r := range versions.CNIPluginsMajors {
		cni.rows = append(cni.rows, row{series: r.Major})
	}
	crictl := upstream{name: "crictl", modules: []string{"sigs.k8s.io/cri-tools"}, prefix: "v", patchesOnly: true}
	for _, r := range versions.CrictlRows {
		crictl.rows = append(crictl.rows, row{series: r.Minor, holds: r.Version, note: "for Kubernetes " + r.Minor})
	}
	return []upstream{k8s, ctr, runc, cni, crictl}
}

// containerdModule is the Go module of a containerd minor's releases: the
// major version suffix from 2 on.
func containerdModule(minor string) string {
	if major := strings.SplitN(minor, ".", 2)[0]; major != "0" && major != "1" {
		return "github.com/containerd/containerd/v" + major
	}
	return "github.com/containerd/containerd"
}

var (
	releaseRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)
	preRE     = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+-`)
	// A pseudo-version names a commit, not a release.
	pseudoRE = regexp.MustCompile(`[0-9]{14}-[0-9a-f]{12}$`)
)

// series is the minor ("v1.37", "2.4") or major ("v1") of a version.
func series(v, prefix string, byMajor bool) string {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if byMajor || len(parts) < 2 {
		return prefix + parts[0]
	}
	return prefix + parts[0] + "." + parts[1]
}

// served is what the proxy says of an upstream's modules.
type served struct {
	releases, pre []string // ascending, as the table writes versions
	notes         []string // per module: what was listed, or refused
	known         bool     // at least one module answered
}

func collect(ctx context.Context, p proxyClient, u upstream) (served, error) {
	var s served
	for _, m := range u.modules {
		var vs []string
		list, err := p.list(ctx, m)
		switch {
		case isUnreachable(err):
			return s, err
		case err != nil:
			s.notes = append(s.notes, fmt.Sprintf("%s: the proxy refuses its version list (%v)", m, err))
		default:
			vs = list
			s.known = true
		}
		note := ""
		latest, err := p.latest(ctx, m)
		switch {
		case isUnreachable(err):
			return s, err
		case err != nil:
			note = fmt.Sprintf("@latest not served (%v)", err)
		default:
			note = "@latest " + latest
			vs = append(vs, latest)
			s.known = true
		}
		if list != nil {
			s.notes = append(s.notes, fmt.Sprintf("%s: %d versions listed; %s", m, len(list), note))
		} else {
			s.notes[len(s.notes)-1] += "; " + note
		}
		for _, v := range vs {
			t := u.prefix + strings.TrimPrefix(v, "v")
			switch {
			case releaseRE.MatchString(v) && !slices.Contains(s.releases, t):
				s.releases = append(s.releases, t)
			case preRE.MatchString(v) && !pseudoRE.MatchString(v) && !slices.Contains(s.pre, t):
				s.pre = append(s.pre, t)
			}
		}
	}
	slices.SortFunc(s.releases, versions.CompareVersions)
	// Pre-releases of what is not released yet, ascending.
	s.pre = slices.DeleteFunc(s.pre, func(v string) bool {
		return len(s.releases) > 0 && versions.CompareVersions(preBase(v), s.releases[len(s.releases)-1]) <= 0
	})
	slices.SortFunc(s.pre, func(a, b string) int {
		if c := versions.CompareVersions(preBase(a), preBase(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return s, nil
}

// preBase is the release a pre-release leads to: v1.38.0 of v1.38.0-beta.0.
func preBase(v string) string { return strings.SplitN(v, "-", 2)[0] }

// newestBySeries maps each series to its newest release, and lists the
// series in ascending order.
func newestBySeries(releases []string, prefix string, byMajor bool) (map[string]string, []string) {
	newest := map[string]string{}
	var order []string
	for _, v := range releases { // ascending
		s := series(v, prefix, byMajor)
		if _, ok := newest[s]; !ok {
			order = append(order, s)
		}
		newest[s] = v
	}
	return newest, order
}

// newer lists the releases after v in its series, and the newest release
// of each later series, for a line of the report.
func newer(v string, u upstream, s served) string {
	if !s.known {
		return "newer releases unknown"
	}
	mine := series(v, u.prefix, false)
	var patches []string
	for _, r := range s.releases {
		if series(r, u.prefix, false) == mine && versions.CompareVersions(r, v) > 0 {
			patches = append(patches, r)
		}
	}
	newest, order := newestBySeries(s.releases, u.prefix, false)
	var minors []string
	for _, m := range order {
		if versions.CompareVersions(m, mine) > 0 {
			minors = append(minors, newest[m])
		}
	}
	if u.patchesOnly {
		return "newer patches: " + orNone(patches)
	}
	return "newer patches: " + orNone(patches) + "; newer minors: " + orNone(minors)
}

// join joins the non-empty parts with ", ".
func join(parts ...string) string {
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), ", ")
}

func orNone(vs []string) string {
	if len(vs) == 0 {
		return "none"
	}
	return strings.Join(vs, ", ")
}

// pastEOL says whether now is after the end-of-life date eol.
func pastEOL(eol string, now time.Time) bool {
	d, err := time.Parse(time.DateOnly, eol)
	return err == nil && now.After(d.AddDate(0, 0, 1))
}

func eolText(r row, now time.Time) string {
	var parts []string
	if r.lts {
		parts = append(parts, "LTS")
	}
	switch {
	case r.eol == "":
	case pastEOL(r.eol, now):
		parts = append(parts, "end of life "+r.eol+" (passed)")
	default:
		parts = append(parts, "end of life "+r.eol)
	}
	return strings.Join(parts, ", ")
}

// report writes, for every upstream, what the table holds and what the
// proxy serves that is newer, and which default is past its end of life.
// It stops at the first sign that the proxy cannot be reached.
func report(ctx context.Context, w io.Writer, p proxyClient, now time.Time) error {
	var past []string
	for _, u := range upstreams() {
		s, err := collect(ctx, p, u)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n%s\n", u.name)
		for _, n := range s.notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
		if len(s.pre) > 0 {
			fmt.Fprintf(w, "  pre-releases newer than every release: %s\n", strings.Join(s.pre, ", "))
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		newest, order := newestBySeries(s.releases, u.prefix, u.byMajor)
		for _, r := range u.rows {
			served := "newest served: " + newest[r.series]
			switch {
			case !s.known:
				served = "newest served: unknown"
			case newest[r.series] == "":
				served = "newest served: none"
			}
			label, what := "  "+r.series, served
			if r.holds != "" {
				label = "  " + r.holds
				what = newer(r.holds, u, s)
				if s.known && !slices.Contains(s.releases, r.holds) {
					what = "not served itself; " + what
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", label, join(r.note, eolText(r, now)), what)
		}
		var beyond []string
		last := u.rows[len(u.rows)-1].series
		for _, sr := range order {
			if versions.CompareVersions(sr, last) > 0 {
				beyond = append(beyond, newest[sr])
			}
		}
		kind := "minors"
		if u.byMajor {
			kind = "majors"
		}
		if s.known {
			fmt.Fprintf(tw, "  newer %s than the table\t\t%s\n", kind, orNone(beyond))
		}
		if u.def != "" {
			line := newer(u.def, u, s)
			i := slices.IndexFunc(u.rows, func(r row) bool { return r.series == series(u.def, u.prefix, u.byMajor) })
			if i >= 0 && pastEOL(u.rows[i].eol, now) {
				line += "; past its end of life, " + u.rows[i].eol
				past = append(past, fmt.Sprintf("%s %s (%s)", u.defKey, u.def, u.rows[i].eol))
			}
			fmt.Fprintf(tw, "  default %s = %s\t\t%s\n", u.defKey, u.def, line)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "defaults past their end of life: %s\n", orNone(past))
	return nil
}

// today is the date the report judges end-of-life dates on.
func today(s string) (time.Time, error) {
	if s == "" {
		return time.Now().UTC(), nil
	}
	return time.Parse(time.DateOnly, s)
}
