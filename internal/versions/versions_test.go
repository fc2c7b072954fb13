// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package versions

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionTableRowsAreConsistent(t *testing.T) {
	require.NotEmpty(t, KubernetesMinors)
	require.NotEmpty(t, ContainerdMinors)
	require.NotEmpty(t, CNIPluginsMajors)
	require.NotEmpty(t, WindowsReleases)
	ascending := func(name string, versions []string) {
		for i := 1; i < len(versions); i++ {
			assert.Negative(t, CompareVersions(versions[i-1], versions[i]), "%s rows must be oldest first: %v", name, versions)
		}
	}
	var k8s, ctr, cni, win []string
	for _, r := range KubernetesMinors {
		k8s = append(k8s, r.Minor)
		assert.Regexp(t, `^v[0-9]+\.[0-9]+$`, r.Minor)
		tag, ok := upstreamPauseTag(r.PauseImage)
		assert.True(t, ok && tag != "", "kubeadm's pause image is %s:<version>: %s", UpstreamPause, r.PauseImage)
		assert.NotEmpty(t, r.ContainerdConfigVersions, r.Minor)
		for _, v := range r.ContainerdConfigVersions {
			assert.True(t, slices.ContainsFunc(ContainerdMinors, func(c ContainerdMinor) bool { return c.ConfigVersion == v }),
				"Kubernetes %s: no containerd row writes config version %d", r.Minor, v)
		}
	}
	for _, r := range ContainerdMinors {
		ctr = append(ctr, r.Minor)
		assert.Regexp(t, `^[0-9]+\.[0-9]+$`, r.Minor)
		major := parseVersion(r.Minor)[0]
		assert.Equal(t, map[bool]int{true: 3, false: 2}[major >= 2], r.ConfigVersion, "containerd %s: config version 3 from 2.0, 2 before", r.Minor)
		assert.False(t, r.CNIBinDirs && r.ConfigVersion != 3, "containerd %s: bin_dirs exists only in config version 3", r.Minor)
		assert.Equal(t, r.CNIBinDirs, CompareVersions(r.Minor, "2.1") >= 0, "containerd %s: bin_dirs from 2.1", r.Minor)
		assert.Regexp(t, releaseVersion, r.RuncVersion, "containerd %s: runc version", r.Minor)
	}
	for _, r := range CNIPluginsMajors {
		cni = append(cni, r.Major)
		assert.Regexp(t, `^v[0-9]+$`, r.Major)
	}
	for i, r := range WindowsReleases {
		win = append(win, r.Version)
		if i > 0 {
			assert.Greater(t, r.Build, WindowsReleases[i-1].Build)
		}
		assert.NotNil(t, parseVersion(r.MinPause), "Windows %s: MinPause %q", r.Version, r.MinPause)
		for _, v := range append(append([]RegistryDWORD{}, WindowsRegistry...), r.Registry...) {
			assert.LessOrEqual(t, v.Value, uint32(math.MaxInt32), "%s\\%s: the script writes DWORDs as [int]", v.Key, v.Name)
			assert.False(t, strings.HasPrefix(v.Key, "HKLM"), "keys are relative to HKLM:\\: %s", v.Key)
			assert.NotEmpty(t, v.Why)
		}
	}
	ascending("kubernetes", k8s)
	ascending("containerd", ctr)
	ascending("cni plugins", cni)
	ascending("windows", win)
	assert.Equal(t, 65535, WindowsDynamicTCPPorts.Start+WindowsDynamicTCPPorts.Count-1, "the dynamic range ends at the last port")
	// The defaults are releases of rows.
	for _, err := range []error{
		errOf(LookupKubernetes(Defaults.Kubernetes)),
		errOf(LookupContainerd(Defaults.Containerd)),
		errOf(LookupCNIPlugins(Defaults.CNIPlugins)),
	} {
		assert.NoError(t, err)
	}
}

// The facts of each minor, as read in its release branch (see versions.go
// for the sources), looked up through a patch release of it.
func TestKubernetesFactsPerMinor(t *testing.T) {
	for _, tc := range []struct {
		version, minor, pause string
		podInfraFlag          bool
		containerd            []int
		// logRotation: kube-log-runner has -log-file-size (component-base
		// v0.34.0 has it, v0.33.13 not).
		logRotation bool
	}{
		{"v1.30.14", "v1.30", "3.9", true, []int{2, 3}, false},
		{"v1.31.0", "v1.31", "3.10", true, []int{2, 3}, false},
		{"v1.32.9", "v1.32", "3.10", true, []int{2, 3}, false},
		{"v1.33.13", "v1.33", "3.10", true, []int{2, 3}, false},
		{"v1.34.3", "v1.34", "3.10.1", true, []int{2, 3}, true},
		{"v1.35.4", "v1.35", "3.10.1", false, []int{2, 3}, true},
		// containerd recommends 2.3.0+ and 2.2.0+ only for v1.36.
		{"v1.36.0", "v1.36", "3.10.2", false, []int{3}, true},
		// and 2.4.0+ and 2.3.0+ for v1.37.
		{"v1.37.2", "v1.37", "3.10.2", false, []int{3}, true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			k, err := LookupKubernetes(tc.version)
			require.NoError(t, err)
			assert.Equal(t, tc.version, k.Version, "the release asked for, not the row's")
			assert.Equal(t, tc.minor, k.Minor)
			assert.Equal(t, "registry.k8s.io/pause:"+tc.pause, k.PauseImage)
			assert.Equal(t, tc.podInfraFlag, k.PodInfraContainerImageFlag)
			assert.Equal(t, tc.containerd, k.ContainerdConfigVersions)
			assert.Equal(t, tc.logRotation, k.KubeLogRunnerRotation)
			assert.Empty(t, k.Unlisted)
			assert.Empty(t, k.Warning())
		})
	}
	assert.Len(t, KubernetesMinors, 8, "a new row gets its facts asserted here")
}

func TestContainerdAndCNIPluginsAnyPatchOfAKnownRelease(t *testing.T) {
	for _, tc := range []struct {
		version       string
		configVersion int
		binDirs       bool
		runc          string
	}{
		{"1.7.0", 2, false, "v1.2.6"},
		{"1.7.29", 2, false, "v1.2.6"},
		{"2.0.7", 3, false, "v1.3.6"},
		{"2.1.4", 3, true, "v1.3.0"},
		{"2.1.5", 3, true, "v1.3.0"},
		{"2.2.1", 3, true, "v1.3.6"},
		{"2.3.7", 3, true, "v1.5.2"},
		{"2.4.2", 3, true, "v1.5.2"},
	} {
		c, err := LookupContainerd(tc.version)
		require.NoError(t, err, tc.version)
		assert.Equal(t, tc.version, c.Version)
		assert.Equal(t, tc.configVersion, c.ConfigVersion, tc.version)
		assert.Equal(t, tc.binDirs, c.CNIBinDirs, tc.version)
		assert.Equal(t, tc.runc, c.RuncVersion, tc.version)
	}
	for _, v := range []string{"v1.0.0", "v1.6.2", "v1.7.1", "v1.42.0"} {
		c, err := LookupCNIPlugins(v)
		require.NoError(t, err, v)
		assert.Equal(t, v, c.Version)
	}
}

// Unknown minors, pre-releases and misspelt versions are refused, each
// error naming its key and what is allowed.
func TestLookupsRefuseWhatTheTableDoesNotKnow(t *testing.T) {
	knownK8s := "any release vX.Y.Z of the minor releases v1.30, v1.31, v1.32, v1.33, v1.34, v1.35, v1.36, v1.37"
	knownCtr := "any release X.Y.Z of the minor releases 1.7, 2.0, 2.1, 2.2, 2.3, 2.4"
	knownCNI := "any release vX.Y.Z of the major releases v1"
	for _, tc := range []struct {
		lookup func(string) error
		value  string
		want   string
	}{
		{kubernetes, "v1.20.0", `kubernetes_version: v1.20.0 is a release of v1.20, which is not in kubenode-bake's version table; allowed: ` + knownK8s},
		{kubernetes, "v1.38.1", `kubernetes_version: v1.38.1 is a release of v1.38, which is not in kubenode-bake's version table; allowed: ` + knownK8s +
			", or any release with allow_unlisted_version = true"},
		{kubernetes, "v1.35.0-rc.1", `kubernetes_version: "v1.35.0-rc.1" is a pre-release; kubenode-bake installs releases only; allowed: ` + knownK8s},
		{kubernetes, "1.33.13", `kubernetes_version: "1.33.13": write it v1.33.13 (releases are vX.Y.Z); allowed: ` + knownK8s},
		{kubernetes, "v1.33", `kubernetes_version: "v1.33" is not a release version vX.Y.Z; allowed: ` + knownK8s},
		{kubernetes, "v1.33.013", `kubernetes_version: "v1.33.013" is not a release version vX.Y.Z`},
		{kubernetes, "latest", `kubernetes_version: "latest" is not a release version vX.Y.Z`},
		{containerd, "1.6.36", `containerd_version: 1.6.36 is a release of 1.6, which is not in kubenode-bake's version table; allowed: ` + knownCtr},
		{containerd, "v2.1.4", `containerd_version: "v2.1.4": write it 2.1.4 (releases are X.Y.Z); allowed: ` + knownCtr},
		{containerd, "2.2.0-beta.0", `containerd_version: "2.2.0-beta.0" is a pre-release`},
		{cniPlugins, "v0.9.1", `cni_plugins_version: v0.9.1 is a release of v0, which is not in kubenode-bake's version table; allowed: ` + knownCNI},
		{cniPlugins, "1.6.2", `cni_plugins_version: "1.6.2": write it v1.6.2`},
	} {
		err := tc.lookup(tc.value)
		require.Error(t, err, tc.value)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// With AllowUnlisted, a release of a series the table lacks takes the
// nearest row's facts and says so; what is not a release stays refused.
func TestLookupsAllowUnlisted(t *testing.T) {
	allow := AllowUnlisted(true)
	newestK8s := KubernetesMinors[len(KubernetesMinors)-1]
	for _, tc := range []struct {
		version, unlisted string
		row               KubernetesMinor
	}{
		{"v1.99.2", "v1.99", newestK8s},
		{"v2.0.0", "v2.0", newestK8s},
		{"v1.20.0", "v1.20", KubernetesMinors[0]},
		{"v0.99.0", "v0.99", KubernetesMinors[0]},
	} {
		k, err := LookupKubernetes(tc.version, allow)
		require.NoError(t, err, tc.version)
		assert.Equal(t, KubernetesRelease{Version: tc.version, Unlisted: tc.unlisted, KubernetesMinor: tc.row}, k)
		assert.Equal(t, "kubernetes_version "+tc.version+": "+tc.unlisted+" is not in kubenode-bake's version table; using "+tc.row.Minor+"'s facts (pause image "+tc.row.PauseImage, k.Warning()[:strings.Index(k.Warning(), ",")])
	}
	k, err := LookupKubernetes("v1.99.2", allow)
	require.NoError(t, err)
	assert.Contains(t, k.Warning(), "a kubelet without --pod-infra-container-image, containerd config versions 3)")

	newestCtr := ContainerdMinors[len(ContainerdMinors)-1]
	c, err := LookupContainerd("9.4.1", allow)
	require.NoError(t, err)
	assert.Equal(t, ContainerdRelease{Version: "9.4.1", Unlisted: "9.4", ContainerdMinor: newestCtr}, c)
	assert.Equal(t, "containerd_version 9.4.1: 9.4 is not in kubenode-bake's version table; using "+newestCtr.Minor+"'s facts (config version 3, CNI bin_dirs, runc "+newestCtr.RuncVersion+")", c.Warning())
	// Between two rows: the older row's facts.
	c, err = LookupContainerd("1.8.0", allow)
	require.NoError(t, err)
	assert.Equal(t, "1.7", c.Minor)
	assert.Contains(t, c.Warning(), "using 1.7's facts (config version 2, CNI bin_dir, runc ")

	n, err := LookupCNIPlugins("v2.0.0", allow)
	require.NoError(t, err)
	assert.Equal(t, CNIPluginsRelease{Version: "v2.0.0", Unlisted: "v2", Major: "v1"}, n)
	assert.Contains(t, n.Warning(), "cni_plugins_version v2.0.0: v2 is not in kubenode-bake's version table; using v1's facts")

	newestCrictl := CrictlRows[len(CrictlRows)-1]
	cr, err := LookupCrictl("v1.99.0", KubernetesRelease{}, allow)
	require.NoError(t, err)
	assert.Equal(t, CrictlRelease{Version: "v1.99.0", Unlisted: "v1.99", Minor: newestCrictl.Minor}, cr)
	assert.Contains(t, cr.Warning(), "crictl_version v1.99.0: v1.99 is not in kubenode-bake's version table; using "+newestCrictl.Minor+"'s facts")
	// crictl_version unset: the row of the minor the Kubernetes release
	// takes its facts from.
	cr, err = LookupCrictl("", k)
	require.NoError(t, err)
	assert.Equal(t, newestCrictl.Version, cr.Version)
	assert.Equal(t, "crictl_version unset: Kubernetes v1.99 is not in kubenode-bake's version table; installing "+newestCrictl.Minor+"'s cri-tools release "+newestCrictl.Version+" (crictl_version sets another)", cr.Warning())

	// Listed releases carry no warning, with the option or without.
	for _, opts := range [][]LookupOption{{allow}, {AllowUnlisted(false)}, nil} {
		k, err := LookupKubernetes(newestK8s.Minor+".3", opts...)
		require.NoError(t, err)
		assert.Empty(t, k.Warning())
		c, err := LookupContainerd(newestCtr.Minor+".0", opts...)
		require.NoError(t, err)
		assert.Empty(t, c.Warning())
		cr, err := LookupCrictl("", k, opts...)
		require.NoError(t, err)
		assert.Empty(t, cr.Warning())
	}
	// Unlisted only when allowed.
	require.Error(t, errOf(LookupKubernetes("v1.99.2", AllowUnlisted(false))))
	require.Error(t, errOf(LookupCrictl("v1.99.0", KubernetesRelease{})))
	// Pre-releases and misspellings are refused still.
	for _, err := range []error{
		errOf(LookupKubernetes("v1.99.0-rc.1", allow)),
		errOf(LookupKubernetes("1.99.0", allow)),
		errOf(LookupContainerd("2.5.0-beta.0", allow)),
		errOf(LookupCrictl("v1.99", KubernetesRelease{}, allow)),
		errOf(LookupCNIPlugins("v2.0.0-rc1", allow)),
	} {
		assert.Error(t, err)
	}
}

func kubernetes(v string) error { _, err := LookupKubernetes(v); return err }
func containerd(v string) error { _, err := LookupContainerd(v); return err }
func cniPlugins(v string) error { _, err := LookupCNIPlugins(v); return err }

func TestLookupsNameTheirKeyAndTheKnownValues(t *testing.T) {
	for key, lookup := range map[string]func(string) error{
		"kubernetes_version":  kubernetes,
		"containerd_version":  containerd,
		"cni_plugins_version": cniPlugins,
	} {
		err := lookup("0.0.0-unknown")
		require.Error(t, err, key)
		assert.Contains(t, err.Error(), key+`: "0.0.0-unknown" `)
		assert.Contains(t, err.Error(), "allowed: any release ")
		assert.NoError(t, lookup(""), "%s: empty is the default", key)
	}
	k, err := LookupKubernetes("")
	require.NoError(t, err)
	assert.Equal(t, Defaults.Kubernetes, k.Version)
	c, err := LookupContainerd("")
	require.NoError(t, err)
	assert.Equal(t, Defaults.Containerd, c.Version)
	n, err := LookupCNIPlugins("")
	require.NoError(t, err)
	assert.Equal(t, Defaults.CNIPlugins, n.Version)

	err = errOf(LookupWindows("0.0.0-unknown"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `windows_version: "0.0.0-unknown" is not in kubenode-bake's version table (known: `)
	w, err := LookupWindows("")
	require.NoError(t, err)
	assert.Equal(t, WindowsReleases[len(WindowsReleases)-1], w)
	unknown := errString(LookupWindowsBuild(1))
	assert.Contains(t, unknown, "windows_version: the guest runs Windows build 1, which is not in kubenode-bake's version table")
	for _, r := range WindowsReleases {
		got, err := LookupWindowsBuild(r.Build)
		require.NoError(t, err)
		assert.Equal(t, r.Version, got.Version)
		assert.Contains(t, unknown, fmt.Sprintf("%d (Windows Server %s)", r.Build, r.Version))
	}
}

func errOf[R any](_ R, err error) error { return err }

func errString(_ WindowsRelease, err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestWindowsPauseMinimum(t *testing.T) {
	for _, w := range WindowsReleases {
		min := UpstreamPause + ":" + w.MinPause
		assert.NoError(t, CheckWindowsPause(min, w), "the minimum itself")
		parts := parseVersion(w.MinPause)
		parts[len(parts)-1]++
		above := UpstreamPause + ":" + joinVersion(parts)
		assert.NoError(t, CheckWindowsPause(above, w))
		if parts[len(parts)-1] >= 2 {
			parts[len(parts)-1] -= 2
			below := UpstreamPause + ":" + joinVersion(parts)
			err := CheckWindowsPause(below, w)
			require.Error(t, err, "%s on %s", below, w.Version)
			assert.Contains(t, err.Error(), "pause_image: "+below+" has no image for Windows Server "+w.Version)
			assert.Contains(t, err.Error(), "the minimum is "+min)
		}
		assert.NoError(t, CheckWindowsPause(UpstreamPause+"@sha256:"+strings.Repeat("0", 64), w), "a digest is not judged")
		for _, m := range KubernetesMinors {
			k := KubernetesRelease{Version: m.Minor + ".0", KubernetesMinor: m}
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

// Download URLs are built from the version asked for, whichever patch
// release it is, each with its published checksum file.
func TestArtifactsComeFromTheOfficialReleasesOfTheVersionAskedFor(t *testing.T) {
	for _, v := range []string{"v1.32.9", "v1.34.3", "v1.35.4"} {
		k, err := LookupKubernetes(v)
		require.NoError(t, err)
		arts := k.WindowsArtifacts()
		require.Len(t, arts, 4)
		for i, name := range []string{ArtifactKubelet, ArtifactKubeadm, ArtifactKubectl, ArtifactKubeLogRunner} {
			assert.Equal(t, name, arts[i].Name)
			assert.Equal(t, name+".exe", arts[i].FileName)
			assert.Equal(t, "https://dl.k8s.io/release/"+v+"/bin/windows/amd64/"+name+".exe", arts[i].URL)
			assert.Equal(t, arts[i].URL+".sha256", arts[i].ChecksumURL)
		}
		arts = k.LinuxArtifacts()
		require.Len(t, arts, 3)
		for i, name := range []string{ArtifactKubelet, ArtifactKubeadm, ArtifactKubectl} {
			assert.Equal(t, artifactFor(name, name, "https://dl.k8s.io/release/"+v+"/bin/linux/amd64/"+name, ".sha256"), arts[i])
		}
	}
	for _, tc := range []struct{ version, runc string }{{"1.7.29", "v1.2.6"}, {"2.0.7", "v1.3.6"}, {"2.2.1", "v1.3.6"}} {
		c, err := LookupContainerd(tc.version)
		require.NoError(t, err)
		base := "https://github.com/containerd/containerd/releases/download/v" + tc.version + "/containerd-" + tc.version
		assert.Equal(t, artifactFor(ArtifactContainerd, "containerd-"+tc.version+"-windows-amd64.tar.gz", base+"-windows-amd64.tar.gz", ".sha256sum"), c.WindowsArtifact())
		linux := c.LinuxArtifacts()
		require.Len(t, linux, 2)
		assert.Equal(t, artifactFor(ArtifactContainerd, "containerd-"+tc.version+"-linux-amd64.tar.gz", base+"-linux-amd64.tar.gz", ".sha256sum"), linux[0])
		runc := "https://github.com/opencontainers/runc/releases/download/" + tc.runc
		assert.Equal(t, Artifact{Name: ArtifactRunc, FileName: "runc.amd64", URL: runc + "/runc.amd64", ChecksumURL: runc + "/runc.sha256sum"}, linux[1])
	}
	for _, v := range []string{"v1.6.2", "v1.7.1"} {
		c, err := LookupCNIPlugins(v)
		require.NoError(t, err)
		base := "https://github.com/containernetworking/plugins/releases/download/" + v + "/cni-plugins-"
		assert.Equal(t, artifactFor(ArtifactCNIPlugins, "cni-plugins-windows-amd64-"+v+".tgz", base+"windows-amd64-"+v+".tgz", ".sha256"), c.WindowsArtifact())
		assert.Equal(t, artifactFor(ArtifactCNIPlugins, "cni-plugins-linux-amd64-"+v+".tgz", base+"linux-amd64-"+v+".tgz", ".sha256"), c.LinuxArtifact())
	}
}

// artifactFor is the artifact downloaded from url, checked against url+sum.
func artifactFor(name, file, url, sum string) Artifact {
	return Artifact{Name: name, FileName: file, URL: url, ChecksumURL: url + sum}
}

// versionPatterns match a version of the table written anywhere else: each
// row's major.minor (with or without v, followed by a dot or the end), the
// Windows build numbers, and any upstream pause tag.
func versionPatterns() []*regexp.Regexp {
	versions := []string{Defaults.Kubernetes, Defaults.Containerd, Defaults.CNIPlugins}
	for _, r := range KubernetesMinors {
		versions = append(versions, r.Minor, r.PauseImage[strings.LastIndex(r.PauseImage, ":")+1:])
	}
	for _, r := range ContainerdMinors {
		versions = append(versions, r.Minor, r.RuncVersion)
	}
	pats := []*regexp.Regexp{regexp.MustCompile(`pause:3\.`), regexp.MustCompile(`\bv1\.\d+\.\d+`)}
	for _, r := range WindowsReleases {
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

// TestNoVersionLiteralsOutsideTheTable holds the table to its promise: it
// is the only place versions live. It reads the string literals (comments
// may give examples) of the bake's non-test files (provisioner/bake and the
// packages under it) and of the Windows golden cases, which take their
// versions from the table.
func TestNoVersionLiteralsOutsideTheTable(t *testing.T) {
	pats := versionPatterns()
	var files []string
	require.NoError(t, filepath.WalkDir(bakeDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "guesttest" {
			return filepath.SkipDir // test doubles and fixtures, like the _test files
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") || filepath.ToSlash(p) == bakeDir+"/windows/windows_test.go" {
			files = append(files, p)
		}
		return nil
	}))
	checked := 0
	for _, f := range files {
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
	assert.GreaterOrEqual(t, len(hits), 3+len(KubernetesMinors)+len(ContainerdMinors))
	for _, lit := range []string{
		"`containerd-" + Defaults.Containerd + "-windows`",       // a default
		`"containerd-" + "` + ContainerdMinors[0].Minor + `.99"`, // any patch of a row
		`"kubelet of ` + KubernetesMinors[0].Minor + `"`,         // a row
		`"registry.k8s.io/pause:3.99"`,                           // a pause tag
		`"https://dl.k8s.io/release/v1.99.0/bin"`,                // any Kubernetes release
	} {
		assert.NotEmpty(t, versionLiterals(t, "x.go", []byte("package x\nvar _ = "+lit+"\n"), pats), lit)
	}
}

// The docs' list of supported versions is the table's: every row and
// default is named in docs/bake.md's "Supported versions" section and every
// version named there is of the table. The README names the default
// Kubernetes release.
func TestDocsNameEveryVersionInTheTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/bake.md")
	require.NoError(t, err)
	section := markdownSection(t, string(doc), "## Supported versions")
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(readme), "`"+Defaults.Kubernetes+"`"), "README.md does not name the default kubernetes_version %s", Defaults.Kubernetes)

	want := []string{Defaults.Kubernetes, Defaults.Containerd, Defaults.CNIPlugins}
	for _, r := range KubernetesMinors {
		want = append(want, r.Minor)
		if tag, ok := upstreamPauseTag(r.PauseImage); ok {
			want = append(want, tag)
		}
	}
	for _, r := range ContainerdMinors {
		want = append(want, r.Minor, r.RuncVersion)
	}
	for _, r := range CNIPluginsMajors {
		want = append(want, r.Major)
	}
	for _, r := range CrictlRows {
		want = append(want, r.Version)
	}
	for _, r := range WindowsReleases {
		want = append(want, r.Version)
		assert.Contains(t, section, fmt.Sprintf("build %d", r.Build))
	}
	for _, v := range want {
		assert.True(t, strings.Contains(section, "`"+v+"`") || strings.Contains(section, ":"+v+"`"),
			"docs/bake.md, Supported versions: %s from versions.go is not named", v)
	}
	// Versions the section names (in backquotes) are of the table: a row,
	// a default, a pause tag or a runc release.
	for _, m := range regexp.MustCompile("`v?[0-9]+\\.[0-9]+(\\.[0-9]+)?`").FindAllString(section, -1) {
		v := strings.Trim(m, "`")
		assert.Contains(t, want, v, "docs/bake.md, Supported versions: %s is not in versions.go", v)
	}
}

// bakeDir is the bake provisioner's source, whose packages name no version.
const bakeDir = "../../provisioner/bake"

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

// The options' documentation (config.go's field comments, rendered into
// the docs) names the defaults and the range of the table.
func TestOptionDocsNameTheTable(t *testing.T) {
	src, err := os.ReadFile(bakeDir + "/config.go")
	require.NoError(t, err)
	doc := strings.Join(slices.DeleteFunc(strings.Fields(string(src)), func(w string) bool { return w == "//" }), " ")
	var ctr []string
	for _, r := range ContainerdMinors {
		ctr = append(ctr, r.Minor)
	}
	for _, want := range []string{
		"Default `" + Defaults.Kubernetes + "`",
		"Default `" + Defaults.Containerd + "`",
		"Default `" + Defaults.CNIPlugins + "`",
		"(" + KubernetesMinors[0].Minor + " to " + KubernetesMinors[len(KubernetesMinors)-1].Minor + ";",
		"(" + strings.Join(ctr, ", ") + ")",
		"any " + CNIPluginsMajors[len(CNIPluginsMajors)-1].Major + " release",
	} {
		assert.Contains(t, doc, want, "config.go")
	}
}

// crictl's releases: the table's release for each Kubernetes minor, from
// its official URL.
func TestCrictlReleasePerKubernetesMinor(t *testing.T) {
	for _, r := range KubernetesMinors {
		k, err := LookupKubernetes(r.Minor + ".0")
		require.NoError(t, err)
		cr, err := LookupCrictl("", k)
		require.NoError(t, err, r.Minor)
		assert.True(t, strings.HasPrefix(cr.Version, r.Minor+"."), "Kubernetes %s installs crictl %s of its own minor", r.Minor, cr.Version)
		base := "https://github.com/kubernetes-sigs/cri-tools/releases/download/" + cr.Version + "/crictl-" + cr.Version
		assert.Equal(t, artifactFor(ArtifactCrictl, "crictl-"+cr.Version+"-linux-amd64.tar.gz", base+"-linux-amd64.tar.gz", ".sha256"), cr.LinuxArtifact())
		assert.Equal(t, artifactFor(ArtifactCrictl, "crictl-"+cr.Version+"-windows-amd64.tar.gz", base+"-windows-amd64.tar.gz", ".sha256"), cr.WindowsArtifact())
	}
	assert.Len(t, CrictlRows, len(KubernetesMinors), "a crictl row for every Kubernetes minor")

}

// containerd's Kubernetes support matrix, as the table holds it: each
// minor's recommended releases, and the config versions that follow from
// them.
func TestContainerdMatrixPerMinor(t *testing.T) {
	want := map[string][]string{
		"v1.30": {"2.1.0", "2.0.0", "1.7.13", "1.6.28"},
		"v1.31": {"2.1.0", "2.0.0", "1.7.20", "1.6.34"},
		"v1.32": {"2.1.0", "2.0.1", "1.7.24", "1.6.36"},
		"v1.33": {"2.1.0", "2.0.4", "1.7.24", "1.6.36"},
		"v1.34": {"2.1.3", "2.0.6", "1.7.28", "1.6.39"},
		"v1.35": {"2.2.0", "2.1.5", "1.7.28"},
		"v1.36": {"2.3.0", "2.2.0"},
		"v1.37": {"2.4.0", "2.3.0"},
	}
	for _, r := range KubernetesMinors {
		assert.Equal(t, want[r.Minor], r.Containerd, r.Minor)
		// The config versions are those of the listed minors the table has.
		var cfg []int
		for _, v := range r.Containerd {
			assert.Regexp(t, releaseVersion, v, r.Minor)
			for _, c := range ContainerdMinors {
				if strings.HasPrefix(v, c.Minor+".") && !slices.Contains(cfg, c.ConfigVersion) {
					cfg = append(cfg, c.ConfigVersion)
				}
			}
		}
		slices.Sort(cfg)
		assert.Equal(t, cfg, r.ContainerdConfigVersions, "%s: config versions of the matrix's minors", r.Minor)
		assert.Regexp(t, `^20[0-9]{2}-[01][0-9]-[0-3][0-9]$`, r.EndOfLife, r.Minor)
		for _, w := range r.WindowsServer {
			assert.NoError(t, errOf(LookupWindows(w)), "%s: Windows Server %s is a row", r.Minor, w)
		}
	}
	assert.Len(t, want, len(KubernetesMinors), "a new row gets its matrix asserted here")
	var lts []string
	for _, c := range ContainerdMinors {
		assert.Regexp(t, `^20[0-9]{2}-[01][0-9]-[0-3][0-9]$`, c.EndOfLife, c.Minor)
		if c.LTS {
			lts = append(lts, c.Minor)
		}
	}
	assert.Equal(t, []string{"1.7", "2.0", "2.3"}, lts, "containerd's LTS lines (RELEASES.md)")
}

// Validation accepts a Kubernetes release with the containerd releases
// containerd's matrix recommends for its minor, and refuses what the
// matrix excludes, naming the releases it lists.
func TestCheckContainerd(t *testing.T) {
	for _, tc := range []struct {
		k8s, ctr string
		ok       bool
	}{
		{"v1.37.0", "2.4.0", true},
		{"v1.37.2", "2.4.2", true},
		{"v1.37.2", "2.3.0", true},
		{"v1.37.2", "2.3.7", true},
		{"v1.37.2", "2.2.9", false}, // 2.2 is not listed for v1.37
		{"v1.37.2", "2.1.4", false},
		{"v1.37.2", "2.0.14", false},
		{"v1.37.2", "1.7.35", false}, // and has no RuntimeConfig, which v1.38 requires
		{"v1.36.3", "2.2.0", true},
		{"v1.36.3", "2.4.2", true}, // newer than the matrix of the minor: CRI v1 still
		{"v1.36.3", "2.1.9", false},
		{"v1.36.3", "1.7.35", false},
		{"v1.35.4", "2.1.5", true},
		{"v1.35.4", "2.1.4", false}, // below 2.1.5+
		{"v1.35.4", "2.0.14", false},
		{"v1.35.4", "1.7.28", true},
		{"v1.34.3", "1.7.27", false}, // below 1.7.28+
		{"v1.34.3", "2.0.6", true},
		{"v1.34.3", "2.0.5", false},
		{"v1.34.3", "2.3.7", true},
		{"v1.33.13", "2.1.4", true}, // the defaults
		{"v1.33.13", "2.0.3", false},
		{"v1.30.14", "1.7.13", true},
		{"v1.30.14", "1.7.12", false},
	} {
		k, err := LookupKubernetes(tc.k8s)
		require.NoError(t, err)
		c, err := LookupContainerd(tc.ctr)
		require.NoError(t, err)
		err = CheckContainerd(k, c)
		if tc.ok {
			assert.NoError(t, err, "%s with containerd %s", tc.k8s, tc.ctr)
			continue
		}
		require.Error(t, err, "%s with containerd %s", tc.k8s, tc.ctr)
		assert.Contains(t, err.Error(), "containerd_version "+tc.ctr+" with kubernetes_version "+tc.k8s+
			": containerd's Kubernetes support matrix does not list containerd "+tc.ctr+" for Kubernetes "+k.Minor+
			" (it lists "+strings.Join(k.Containerd, "+, ")+"+); set containerd_version to one of those")
	}
	k, err := LookupKubernetes("v1.37.2")
	require.NoError(t, err)
	assert.Contains(t, errString2(CheckContainerd(k, ContainerdRelease{Version: "2.2.9"})), "(it lists 2.4.0+, 2.3.0+)")
	assert.NoError(t, CheckContainerd(KubernetesRelease{}, ContainerdRelease{Version: "1.7.0"}), "no matrix, no refusal")
	// The defaults go together.
	kd, err := LookupKubernetes("")
	require.NoError(t, err)
	cd, err := LookupContainerd("")
	require.NoError(t, err)
	assert.NoError(t, CheckContainerd(kd, cd))
}

func errString2(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Kubernetes' Windows support, where the table records it: v1.37 supports
// Windows Server 2022 and 2025, not 2019.
func TestWindowsWarning(t *testing.T) {
	k, err := LookupKubernetes("v1.37.2")
	require.NoError(t, err)
	for _, tc := range []struct{ windows, want string }{
		{"2019", `kubernetes_version v1.37.2 on Windows Server 2019: Kubernetes' page "Windows containers in Kubernetes" for v1.37 (https://kubernetes.io/docs/concepts/windows/intro/) ` +
			"lists Windows Server 2022 and 2025 as the Windows nodes it supports, not 2019: this node runs outside what Kubernetes tests. Build Windows Server 2022 or 2025 for this minor"},
		{"2022", ""},
		{"2025", ""},
	} {
		w, err := LookupWindows(tc.windows)
		require.NoError(t, err)
		assert.Equal(t, tc.want, k.WindowsWarning(w), tc.windows)
	}
	old, err := LookupKubernetes("v1.33.13")
	require.NoError(t, err)
	w, err := LookupWindows("2019")
	require.NoError(t, err)
	assert.Empty(t, old.WindowsWarning(w), "not recorded for v1.33: no warning")

	assert.Equal(t, []string{"v1.36", "v1.37"}, MinorsWithoutWindows("2019"))
	assert.Empty(t, MinorsWithoutWindows("2022"))
	assert.Empty(t, MinorsWithoutWindows("2025"))
}
