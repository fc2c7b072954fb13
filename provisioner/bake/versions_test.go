package bake

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionTableRowsAreConsistent(t *testing.T) {
	require.NotEmpty(t, kubernetesReleases)
	require.NotEmpty(t, containerdReleases)
	require.NotEmpty(t, cniPluginsReleases)
	require.NotEmpty(t, windowsReleases)
	ascending := func(name string, versions []string) {
		for i := 1; i < len(versions); i++ {
			assert.Negative(t, compareVersions(versions[i-1], versions[i]), "%s rows must be oldest first: %v", name, versions)
		}
	}
	var k8s, ctr, cni, win []string
	for _, r := range kubernetesReleases {
		k8s = append(k8s, r.Version)
		assert.True(t, strings.HasPrefix(r.Version, "v"), "Kubernetes versions start with v: %s", r.Version)
		tag, ok := upstreamPauseTag(r.PauseImage)
		assert.True(t, ok && tag != "", "kubeadm's pause image is %s:<version>: %s", upstreamPause, r.PauseImage)
	}
	for _, r := range containerdReleases {
		ctr = append(ctr, r.Version)
		major := parseVersion(r.Version)[0]
		assert.Equal(t, map[bool]int{true: 3, false: 2}[major >= 2], r.ConfigVersion, "containerd %s: config version 3 from 2.0, 2 before", r.Version)
		assert.False(t, r.CNIBinDirs && r.ConfigVersion != 3, "containerd %s: bin_dirs exists only in config version 3", r.Version)
		assert.NotNil(t, parseVersion(r.RuncVersion), "containerd %s: runc version %q", r.Version, r.RuncVersion)
	}
	for _, r := range cniPluginsReleases {
		cni = append(cni, r.Version)
	}
	for i, r := range windowsReleases {
		win = append(win, r.Version)
		if i > 0 {
			assert.Greater(t, r.Build, windowsReleases[i-1].Build)
		}
		assert.NotNil(t, parseVersion(r.MinPause), "Windows %s: MinPause %q", r.Version, r.MinPause)
		for _, v := range append(append([]RegistryDWORD{}, windowsRegistry...), r.Registry...) {
			assert.LessOrEqual(t, v.Value, uint32(math.MaxInt32), "%s\\%s: the script writes DWORDs as [int]", v.Key, v.Name)
			assert.False(t, strings.HasPrefix(v.Key, "HKLM"), "keys are relative to HKLM:\\: %s", v.Key)
			assert.NotEmpty(t, v.Why)
		}
	}
	ascending("kubernetes", k8s)
	ascending("containerd", ctr)
	ascending("cni plugins", cni)
	ascending("windows", win)
	assert.Equal(t, 65535, windowsDynamicTCPPorts.Start+windowsDynamicTCPPorts.Count-1, "the dynamic range ends at the last port")
}

func TestLookupsNameTheirKeyAndTheKnownValues(t *testing.T) {
	for key, lookup := range map[string]func(string) error{
		"kubernetes_version":  func(v string) error { _, err := LookupKubernetes(v); return err },
		"containerd_version":  func(v string) error { _, err := LookupContainerd(v); return err },
		"cni_plugins_version": func(v string) error { _, err := LookupCNIPlugins(v); return err },
		"windows_version":     func(v string) error { _, err := LookupWindows(v); return err },
	} {
		err := lookup("0.0.0-unknown")
		require.Error(t, err, key)
		assert.Contains(t, err.Error(), key+`: "0.0.0-unknown" is not in kubenode-bake's version table (known: `)
		assert.NoError(t, lookup(""), "%s: empty is the newest row", key)
	}
	w, err := LookupWindows("")
	require.NoError(t, err)
	assert.Equal(t, windowsReleases[len(windowsReleases)-1], w)
	unknown := errString(LookupWindowsBuild(1))
	assert.Contains(t, unknown, "windows_version: the guest runs Windows build 1, which is not in kubenode-bake's version table")
	for _, r := range windowsReleases {
		got, err := LookupWindowsBuild(r.Build)
		require.NoError(t, err)
		assert.Equal(t, r.Version, got.Version)
		assert.Contains(t, unknown, fmt.Sprintf("%d (Windows Server %s)", r.Build, r.Version))
	}
}

func errString(_ WindowsRelease, err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestWindowsPauseMinimum(t *testing.T) {
	for _, w := range windowsReleases {
		min := upstreamPause + ":" + w.MinPause
		assert.NoError(t, CheckWindowsPause(min, w), "the minimum itself")
		parts := parseVersion(w.MinPause)
		parts[len(parts)-1]++
		above := upstreamPause + ":" + joinVersion(parts)
		assert.NoError(t, CheckWindowsPause(above, w))
		if parts[len(parts)-1] >= 2 {
			parts[len(parts)-1] -= 2
			below := upstreamPause + ":" + joinVersion(parts)
			err := CheckWindowsPause(below, w)
			require.Error(t, err, "%s on %s", below, w.Version)
			assert.Contains(t, err.Error(), "pause_image: "+below+" has no image for Windows Server "+w.Version)
			assert.Contains(t, err.Error(), "the minimum is "+min)
		}
		assert.NoError(t, CheckWindowsPause(upstreamPause+"@sha256:"+strings.Repeat("0", 64), w), "a digest is not judged")
		for _, k := range kubernetesReleases {
			assert.NoError(t, CheckWindowsPause(WindowsPauseImage(k, w), w), "the default passes its own check")
		}
	}
}

func joinVersion(parts []int) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ".")
}

func TestWindowsArtifactsComeFromTheOfficialReleases(t *testing.T) {
	k, err := LookupKubernetes("")
	require.NoError(t, err)
	arts := k.WindowsArtifacts()
	require.Len(t, arts, 4)
	for i, name := range []string{ArtifactKubelet, ArtifactKubeadm, ArtifactKubectl, ArtifactKubeLogRunner} {
		assert.Equal(t, name, arts[i].Name)
		assert.Equal(t, name+".exe", arts[i].FileName)
		assert.Equal(t, "https://dl.k8s.io/release/"+k.Version+"/bin/windows/amd64/"+name+".exe", arts[i].URL)
		assert.Equal(t, arts[i].URL+".sha256", arts[i].ChecksumURL)
	}
	for _, c := range containerdReleases {
		a := c.WindowsArtifact()
		assert.Equal(t, "https://github.com/containerd/containerd/releases/download/v"+c.Version+"/containerd-"+c.Version+"-windows-amd64.tar.gz", a.URL)
		assert.Equal(t, a.URL+".sha256sum", a.ChecksumURL)
	}
	for _, c := range cniPluginsReleases {
		a := c.WindowsArtifact()
		assert.Equal(t, "https://github.com/containernetworking/plugins/releases/download/"+c.Version+"/cni-plugins-windows-amd64-"+c.Version+".tgz", a.URL)
		assert.Equal(t, a.URL+".sha256", a.ChecksumURL)
	}
}

// versionPatterns match a version of the table written anywhere else: each
// row's major.minor (with or without v, followed by a dot or the end), the
// Windows build numbers, and any upstream pause tag.
func versionPatterns() []*regexp.Regexp {
	var versions []string
	for _, r := range kubernetesReleases {
		versions = append(versions, r.Version, r.PauseImage[strings.LastIndex(r.PauseImage, ":")+1:])
	}
	for _, r := range containerdReleases {
		versions = append(versions, r.Version, r.RuncVersion)
	}
	for _, r := range cniPluginsReleases {
		versions = append(versions, r.Version)
	}
	pats := []*regexp.Regexp{regexp.MustCompile(`pause:3\.`), regexp.MustCompile(`\bv1\.\d+\.\d+`)}
	for _, r := range windowsReleases {
		versions = append(versions, r.MinPause)
		pats = append(pats, regexp.MustCompile(`\b`+strconv.Itoa(r.Build)+`\b`))
	}
	seen := map[string]bool{}
	for _, v := range versions {
		p := parseVersion(v)
		mm := fmt.Sprintf("%d.%d", p[0], p[1%len(p)])
		if seen[mm] {
			continue
		}
		seen[mm] = true
		pats = append(pats, regexp.MustCompile(`(^|[^0-9.])v?`+regexp.QuoteMeta(mm)+`(\.|\b)`))
	}
	return pats
}

// versionLiterals returns "file:line: literal" for every string literal of
// a Go source that names a version.
func versionLiterals(t *testing.T, name string, src []byte, pats []*regexp.Regexp) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	require.NoError(t, err)
	var hits []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		v, err := strconv.Unquote(lit.Value)
		require.NoError(t, err)
		for _, p := range pats {
			if p.MatchString(v) {
				hits = append(hits, fmt.Sprintf("%s: %q matches %s", fset.Position(lit.Pos()), v, p))
				break
			}
		}
		return true
	})
	return hits
}

// TestNoVersionLiteralsOutsideTheTable is the bar: the version table
// is the only place versions live. It reads the string literals (comments
// may give examples) of the package's non-test files and of the Windows
// golden cases, which take their versions from the table.
func TestNoVersionLiteralsOutsideTheTable(t *testing.T) {
	pats := versionPatterns()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	checked := 0
	for _, f := range files {
		if f == "versions.go" || (strings.HasSuffix(f, "_test.go") && f != "windows_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		checked++
		for _, hit := range versionLiterals(t, f, src, pats) {
			t.Errorf("a version outside versions.go (add a row or a column to the table instead): %s", hit)
		}
	}
	assert.Greater(t, checked, 5)
	// The check can fail: the table's own file is full of versions.
	src, err := os.ReadFile("versions.go")
	require.NoError(t, err)
	hits := versionLiterals(t, "versions.go", src, pats)
	assert.GreaterOrEqual(t, len(hits), len(kubernetesReleases)+len(containerdReleases)+len(cniPluginsReleases))
	assert.NotEmpty(t, versionLiterals(t, "x.go", []byte("package x\nvar _ = `containerd-"+containerdReleases[0].Version+"-windows`\nvar _ = \"registry.k8s.io/pause:3.99\"\n"), pats))
}

// The docs' list of supported versions is the table's: every row is named
// in docs/bake.md's "Supported versions" section and every version named
// there is a row. The README names the Kubernetes releases.
func TestDocsNameEveryVersionInTheTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/bake.md")
	require.NoError(t, err)
	section := markdownSection(t, string(doc), "## Supported versions")
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)

	var want []string
	for _, r := range kubernetesReleases {
		want = append(want, r.Version)
		assert.True(t, strings.Contains(string(readme), "`"+r.Version+"`"), "README.md does not name kubernetes_version %s", r.Version)
		if tag, ok := upstreamPauseTag(r.PauseImage); ok {
			want = append(want, tag)
		}
	}
	for _, r := range containerdReleases {
		want = append(want, r.Version, r.RuncVersion)
	}
	for _, r := range cniPluginsReleases {
		want = append(want, r.Version)
	}
	for _, r := range windowsReleases {
		want = append(want, r.Version)
		assert.Contains(t, section, fmt.Sprintf("build %d", r.Build))
	}
	for _, v := range want {
		assert.True(t, strings.Contains(section, "`"+v+"`") || strings.Contains(section, ":"+v+"`"),
			"docs/bake.md, Supported versions: %s from versions.go is not named", v)
	}
	// Versions the section names (in backquotes) are rows of the table.
	for _, m := range regexp.MustCompile("`v?[0-9]+\\.[0-9]+\\.[0-9]+`").FindAllString(section, -1) {
		v := strings.Trim(m, "`")
		assert.Contains(t, want, v, "docs/bake.md, Supported versions: %s is not in versions.go", v)
	}
}

// markdownSection returns the text under heading, up to the next heading
// of the same level.
func markdownSection(t *testing.T, doc, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	require.True(t, ok, "no %q heading", heading)
	level := heading[:strings.Index(heading, " ")+1]
	if i := strings.Index(rest, "\n"+level); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
