package bake

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// prepareDownloadMirrors checks download_mirrors: every key and value an
// absolute http(s) URL with a host and no query or fragment. Trailing
// slashes are dropped, so "https://dl.k8s.io/" and "https://dl.k8s.io" are
// the same prefix.
func (c *Config) prepareDownloadMirrors() []error {
	var errs []error
	clean := make(map[string]string, len(c.DownloadMirrors))
	for _, k := range sortedKeys(c.DownloadMirrors) {
		v := c.DownloadMirrors[k]
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
	if c.DownloadMirrors != nil {
		c.DownloadMirrors = clean
	}
	return errs
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
// URL and the prefix used. The keys and values are those Prepare
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
func (c *Config) mirrored(a versions.Artifact) (versions.Artifact, []string) {
	var used []string
	for _, u := range []*string{&a.URL, &a.ChecksumURL} {
		if *u == "" {
			continue
		}
		var prefix string
		if *u, prefix = mirrorURL(c.DownloadMirrors, *u); prefix != "" && !slices.Contains(used, prefix) {
			used = append(used, prefix)
		}
	}
	slices.Sort(used)
	return a, used
}
