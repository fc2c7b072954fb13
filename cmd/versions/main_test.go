// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// fixtureProxy is testdata/proxy as a file:// GOPROXY, in the go
// command's layout: <escaped module>/@v/list and <escaped module>/@latest.
// It serves a list and no @latest for Kubernetes and runc, both for
// containerd 2.x, an @latest and no list for the CNI plugins, and nothing
// for cri-tools.
func fixtureProxy(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata/proxy")
	require.NoError(t, err)
	return "file://" + filepath.ToSlash(dir)
}

// pinDefaults makes the report's defaults those the expectations below
// were written for, whatever the table's defaults become.
func pinDefaults(t *testing.T) {
	saved := versions.Defaults
	t.Cleanup(func() { versions.Defaults = saved })
	versions.Defaults.Kubernetes, versions.Defaults.Containerd, versions.Defaults.CNIPlugins = "v1.33.13", "2.1.4", "v1.6.2"
}

func runVersions(t *testing.T, goproxy string, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, goproxy, &out, &errOut)
	assert.Empty(t, errOut.String())
	return out.String(), code
}

// lineWith returns the report's line that starts (after its indent) with
// prefix, failing when there is none.
func lineWith(t *testing.T, report, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(report, "\n") {
		if l = strings.Join(strings.Fields(l), " "); strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no line starting %q in:\n%s", prefix, report)
	return ""
}

func TestReportAgainstAFileProxy(t *testing.T) {
	pinDefaults(t)
	out, code := runVersions(t, fixtureProxy(t)+",https://proxy.golang.org,direct", "-today", "2026-11-29")
	require.Equal(t, 0, code)
	t.Log("\n" + out)

	assert.Contains(t, out, "module proxy: "+fixtureProxy(t)+" (GOPROXY's first entry); end of life judged on 2026-11-29")
	// Kubernetes: the rows, what is newer, the default past its end of life.
	assert.Equal(t, "k8s.io/kubernetes: 8 versions listed; @latest not served (HTTP 404)", lineWith(t, out, "k8s.io/kubernetes:"))
	assert.Equal(t, "v1.30 end of life 2025-07-15 (passed) newest served: v1.30.14", lineWith(t, out, "v1.30 "))
	assert.Equal(t, "v1.31 end of life 2025-11-11 (passed) newest served: none", lineWith(t, out, "v1.31 "))
	assert.Equal(t, "v1.37 end of life 2027-10-28 newest served: v1.37.2", lineWith(t, out, "v1.37 "))
	assert.Equal(t, "pre-releases newer than every release: v1.39.0-alpha.1", lineWith(t, out, "pre-releases newer than every release: v1.39"),
		"a pre-release of a released minor is not news")
	assert.Equal(t, "default kubernetes_version = v1.33.13 newer patches: v1.33.14; newer minors: v1.37.2, v1.38.0; past its end of life, 2026-06-28",
		lineWith(t, out, "default kubernetes_version"))
	section := out[strings.Index(out, "\nkubernetes\n"):strings.Index(out, "\ncontainerd\n")]
	assert.Equal(t, "newer minors than the table v1.38.0", lineWith(t, section, "newer minors than the table"))

	// containerd: two modules, 1.x and 2.x; a pseudo-version is no release.
	assert.Equal(t, "github.com/containerd/containerd: 3 versions listed; @latest not served (HTTP 404)", lineWith(t, out, "github.com/containerd/containerd:"))
	assert.Equal(t, "github.com/containerd/containerd/v2: 4 versions listed; @latest v2.4.2", lineWith(t, out, "github.com/containerd/containerd/v2:"))
	assert.Equal(t, "1.7 LTS, end of life 2026-09-30 (passed) newest served: 1.7.35", lineWith(t, out, "1.7 "))
	assert.Equal(t, "2.3 LTS, end of life 2028-04-30 newest served: none", lineWith(t, out, "2.3 "))
	assert.Equal(t, "pre-releases newer than every release: 2.5.0-beta.0", lineWith(t, out, "pre-releases newer than every release: 2."))
	assert.Equal(t, "default containerd_version = 2.1.4 newer patches: 2.1.9; newer minors: 2.4.2; past its end of life, 2026-07-03",
		lineWith(t, out, "default containerd_version"))
	assert.NotContains(t, out, "20191213020239")

	// runc: each row's release, the containerd minors it goes with.
	assert.Equal(t, "v1.5.2 with containerd 2.3, 2.4 newer patches: v1.5.3; newer minors: v1.6.0", lineWith(t, out, "v1.5.2 "))
	assert.Equal(t, "v1.3.0 with containerd 2.1 not served itself; newer patches: none; newer minors: v1.5.3, v1.6.0", lineWith(t, out, "v1.3.0 "))

	// A refused list is reported, and @latest still answers.
	assert.Equal(t, "github.com/containernetworking/plugins: the proxy refuses its version list (HTTP 404); @latest v1.10.0",
		lineWith(t, out, "github.com/containernetworking/plugins:"))
	assert.Equal(t, "default cni_plugins_version = v1.6.2 newer patches: none; newer minors: v1.10.0", lineWith(t, out, "default cni_plugins_version"))
	// Nothing served: the rows are listed, their news unknown.
	assert.Equal(t, "sigs.k8s.io/cri-tools: the proxy refuses its version list (HTTP 404); @latest not served (HTTP 404)",
		lineWith(t, out, "sigs.k8s.io/cri-tools:"))
	newest := versions.CrictlRows[len(versions.CrictlRows)-1]
	assert.Equal(t, newest.Version+" for Kubernetes "+newest.Minor+" newer releases unknown", lineWith(t, out, newest.Version+" for Kubernetes"))

	assert.True(t, strings.HasSuffix(out, "defaults past their end of life: kubernetes_version v1.33.13 (2026-06-28), containerd_version 2.1.4 (2026-07-03)\n"), out)
}

// Before the dates, nothing is past its end of life; -proxy wins over
// GOPROXY.
func TestReportBeforeTheEndOfLife(t *testing.T) {
	pinDefaults(t)
	out, code := runVersions(t, "off", "-proxy", fixtureProxy(t), "-today", "2026-06-28")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "module proxy: "+fixtureProxy(t)+" (-proxy)")
	assert.Equal(t, "default kubernetes_version = v1.33.13 newer patches: v1.33.14; newer minors: v1.37.2, v1.38.0", lineWith(t, out, "default kubernetes_version"),
		"v1.33's last day is not past it")
	assert.Equal(t, "v1.33 end of life 2026-06-28 newest served: v1.33.14", lineWith(t, out, "v1.33 "))
	assert.True(t, strings.HasSuffix(out, "defaults past their end of life: none\n"), out)
}

// A proxy that refuses lists over HTTP (as the module proxy does for some
// modules) is reported module by module, exit 0.
func TestRefusingHTTPProxy(t *testing.T) {
	pinDefaults(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/k8s.io/kubernetes/@v/list":
			w.Write([]byte("v1.37.2\nv1.33.14\n"))
		case "/k8s.io/kubernetes/@latest":
			w.Write([]byte(`{"Version":"v1.37.2"}`))
		default:
			http.Error(w, "forbidden", http.StatusForbidden)
		}
	}))
	defer srv.Close()
	out, code := runVersions(t, srv.URL+"/", "-today", "2026-11-29")
	require.Equal(t, 0, code)
	assert.Equal(t, "k8s.io/kubernetes: 2 versions listed; @latest v1.37.2", lineWith(t, out, "k8s.io/kubernetes:"))
	assert.Equal(t, "github.com/containerd/containerd/v2: the proxy refuses its version list (HTTP 403); @latest not served (HTTP 403)",
		lineWith(t, out, "github.com/containerd/containerd/v2:"))
	assert.Equal(t, "default containerd_version = 2.1.4 newer releases unknown; past its end of life, 2026-07-03", lineWith(t, out, "default containerd_version"),
		"the end of life is the table's, known without the proxy")
	assert.Contains(t, out, "defaults past their end of life: kubernetes_version v1.33.13 (2026-06-28), containerd_version 2.1.4 (2026-07-03)")
}

// No proxy to reach is reported, not a failure.
func TestUnreachableProxy(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	for _, proxy := range []string{"http://" + addr, "file://" + filepath.ToSlash(t.TempDir()) + "/missing"} {
		out, code := runVersions(t, proxy)
		assert.Equal(t, 0, code, proxy)
		assert.Contains(t, out, "the module proxy "+proxy+" cannot be reached: ", proxy)
		assert.NotContains(t, out, "defaults past their end of life", "no report from a proxy never reached")
	}
	for _, goproxy := range []string{"direct", "off", "direct,https://proxy.golang.org"} {
		out, code := runVersions(t, goproxy)
		assert.Equal(t, 0, code)
		assert.Contains(t, out, "no module proxy to ask: GOPROXY's first entry is \""+strings.Split(goproxy, ",")[0]+"\"")
	}
}

func TestFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"-today", "29.11.2026"}, "off", &out, &errOut))
	assert.Contains(t, errOut.String(), `-today "29.11.2026": want YYYY-MM-DD`)
	assert.Equal(t, 2, run(context.Background(), []string{"-bogus"}, "off", &out, &errOut))
}

func TestFirstProxyAndEscaping(t *testing.T) {
	for goproxy, want := range map[string]string{
		"":                                    "https://proxy.golang.org",
		"https://a.example/,https://b":        "https://a.example",
		"file:///srv/proxy|https://b.example": "file:///srv/proxy",
		" https://a.example , direct":         "https://a.example",
	} {
		got, ok := firstProxy(goproxy)
		assert.True(t, ok, goproxy)
		assert.Equal(t, want, got, goproxy)
	}
	_, ok := firstProxy("off")
	assert.False(t, ok)
	assert.Equal(t, "github.com/!burnt!sushi/toml", escapePath("github.com/BurntSushi/toml"))
	assert.Equal(t, "k8s.io/kubernetes", escapePath("k8s.io/kubernetes"))
	assert.Equal(t, "github.com/containerd/containerd", containerdModule("1.7"))
	assert.Equal(t, "github.com/containerd/containerd/v2", containerdModule("2.4"))
}
