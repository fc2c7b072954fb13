// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package fetch

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// CleanMirrors checks download_mirrors: every key and value an absolute
// http(s) URL with a host and no query or fragment. Trailing slashes are
// dropped, so "https://dl.k8s.io/" and "https://dl.k8s.io" are the same
// prefix. It returns the cleaned map (nil for nil).
func CleanMirrors(mirrors map[string]string) (map[string]string, []error) {
	var errs []error
	var clean map[string]string
	if mirrors != nil {
		clean = make(map[string]string, len(mirrors))
	}
	for _, k := range slices.Sorted(maps.Keys(mirrors)) {
		v := mirrors[k]
		ok := true
		for _, s := range []struct{ what, u string }{{"the prefix", k}, {"the mirror", v}} {
			if why := mirrorURLProblem(s.u); why != "" {
				errs = append(errs, fmt.Errorf("download_mirrors[%q] = %q: %s %q %s", k, v, s.what, s.u, why))
				ok = false
			}
		}
		if !ok {
			continue
		}
		key := strings.TrimRight(k, "/")
		if prev, dup := clean[key]; dup && prev != strings.TrimRight(v, "/") {
			errs = append(errs, fmt.Errorf("download_mirrors[%q] = %q: the same prefix as another entry with a trailing slash more or less, mapped elsewhere (%q); keep one", k, v, prev))
			continue
		}
		clean[key] = strings.TrimRight(v, "/")
	}
	return clean, errs
}

// CheckMirrorProof refuses the downloads (artifacts with a URL and no
// local file) whose checksum file a plain-HTTP mirror serves with nothing
// else to vouch for them, naming the keys that would.
func (o Options) CheckMirrorProof(downloads []versions.Artifact) error {
	var unproven, mirrors []string
	for _, a := range downloads {
		if o.unprovenChecksum(a) != "" {
			unproven = append(unproven, a.Name)
			if _, prefix := mirrorURL(o.Mirrors, a.ChecksumURL); !slices.Contains(mirrors, o.Mirrors[prefix]) {
				mirrors = append(mirrors, o.Mirrors[prefix])
			}
		}
	}
	if len(unproven) == 0 {
		return nil
	}
	slices.Sort(mirrors)
	return fmt.Errorf("download_mirrors: %s: plain HTTP, so the mirror's checksum files prove nothing (whoever is on the way to it can serve any file with a matching checksum): "+
		"give the sha256 of %s in artifact_checksums, use an https:// mirror, or set trust_http_mirror_checksums = true for a mirror on a path nobody else is on (such as this machine's 127.0.0.1)",
		strings.Join(mirrors, ", "), strings.Join(unproven, ", "))
}

func isPlainHTTP(u string) bool {
	p, err := url.Parse(u)
	return err == nil && p.Scheme == "http"
}

// unprovenChecksum returns the checksum URL download_mirrors makes of a's
// when that is plain HTTP and nothing else vouches for the download
// (neither artifact_checksums nor trust_http_mirror_checksums), else "".
func (o Options) unprovenChecksum(a versions.Artifact) string {
	u, prefix := mirrorURL(o.Mirrors, a.ChecksumURL)
	if a.ChecksumURL == "" || prefix == "" || !isPlainHTTP(u) || o.Checksums[a.Name] != "" || o.TrustHTTPMirrorChecksums {
		return ""
	}
	return u
}

// MirrorWarnings say, for each plain-HTTP download_mirrors entry, what
// proves its downloads and what it leaves open.
func (o Options) MirrorWarnings() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(o.Mirrors)) {
		v := o.Mirrors[k]
		if !isPlainHTTP(v) {
			continue
		}
		entry := fmt.Sprintf("download_mirrors[%q] = %q: plain HTTP", k, v)
		if o.TrustHTTPMirrorChecksums {
			out = append(out, entry+", and trust_http_mirror_checksums takes its checksum files on trust: they catch a damaged download, not a changed one "+
				"(whoever is on the way to the mirror can serve any file with a matching checksum); use it only for a mirror on a path nobody else is on")
		} else {
			out = append(out, entry+": artifact_checksums, not the mirror's checksum files, proves each download (a changed file fails the build); "+
				"whoever is on the way to the mirror still sees what is downloaded and can withhold it")
		}
	}
	return out
}

// mirrorURLProblem says why u is no prefix download_mirrors can use, or "".
func mirrorURLProblem(u string) string {
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return fmt.Sprintf("is not a URL: %v", err)
	case p.Scheme != "http" && p.Scheme != "https":
		return "is not an absolute http:// or https:// URL"
	case p.Host == "":
		return "names no host"
	case strings.ContainsAny(u, "?#"):
		return "has a query or fragment: give a URL prefix only"
	case p.User != nil:
		return "holds user information: put credentials in no URL of the template"
	}
	return ""
}

// mirrorURL rewrites u by the longest download_mirrors prefix it starts
// with, matched on whole path segments ("https://github.com" matches
// "https://github.com/containerd/..." but not "https://github.company.com");
// it returns u unchanged and "" when no prefix matches, else the rewritten
// URL and the prefix used. The keys and values are those CleanMirrors
// cleaned (no trailing slash).
func mirrorURL(mirrors map[string]string, u string) (string, string) {
	best := ""
	for k := range mirrors {
		if (u == k || strings.HasPrefix(u, k+"/")) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return u, ""
	}
	return mirrors[best] + u[len(best):], best
}

// mirrored returns a with its URL and ChecksumURL rewritten by
// download_mirrors, and the prefixes that matched (sorted, deduplicated).
func (o Options) mirrored(a versions.Artifact) (versions.Artifact, []string) {
	var used []string
	for _, u := range []*string{&a.URL, &a.ChecksumURL} {
		if *u == "" {
			continue
		}
		var prefix string
		if *u, prefix = mirrorURL(o.Mirrors, *u); prefix != "" && !slices.Contains(used, prefix) {
			used = append(used, prefix)
		}
	}
	slices.Sort(used)
	return a, used
}
