// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

func TestPrepareDefaults(t *testing.T) {
	var c Config
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir()}))
	assert.Equal(t, "tarball", c.ContainerdSource)
	assert.Equal(t, "none", c.CNI)
	assert.Equal(t, "auto", c.HyperV)
	assert.True(t, *c.InstallJoiner)
	assert.True(t, *c.Generalize)
	assert.True(t, *c.DefenderExclusions)
}

func TestPrepareNamesEveryBadKey(t *testing.T) {
	var c Config
	err := c.Prepare(map[string]any{
		"guest_os_type":      "plan9",
		"containerd_source":  "snap",
		"cni":                "calico",
		"hyperv":             "maybe",
		"artifacts_dir":      "/nonexistent",
		"artifacts":          map[string]string{"kubelet": "/nonexistent/kubelet", "kube-proxy": "/x"},
		"artifact_checksums": map[string]string{"kubeadm": "abc"},
		"kubelet_extra_args": map[string]string{"--v": "2"},
	})
	require.Error(t, err)
	for _, want := range []string{
		`guest_os_type: "plan9" is not linux or windows`,
		`containerd_source: "snap" is not tarball or package`,
		`cni: "calico" is not none or bridge`,
		`hyperv: "maybe" is not auto, on or off`,
		`artifacts_dir: "/nonexistent" is not a directory`,
		`artifacts.kubelet: stat /nonexistent/kubelet`,
		`artifacts: unknown artifact "kube-proxy"`,
		`artifact_checksums.kubeadm: want 64 hex digits`,
		`kubelet_extra_args["--v"]: a flag name without leading dashes`,
	} {
		assert.Contains(t, err.Error(), want)
	}
}

// What the joiner refuses at first boot, or what would break the files
// carrying it, fails `packer validate` for every guest OS: otherwise the
// image builds and every clone fails.
func TestPrepareRefusesWhatEveryCloneWouldFailOn(t *testing.T) {
	for _, guest := range []string{"linux", "windows", ""} {
		t.Run("guest_os_type="+guest, func(t *testing.T) {
			var c Config
			err := c.Prepare(map[string]any{
				"guest_os_type":      guest,
				"download_cache_dir": t.TempDir(),
				"node_labels": map[string]string{"node-role.kubernetes.io/worker": "", "node-restriction.kubernetes.io/pool": "a",
					"example.com/ok": "yes", "example.com/bad": "two words"},
				"kubelet_extra_args": map[string]string{"v": "2 --register-node=false", "node-labels": "a=b", "root-dir": `C:\var\lib\kubelet`,
					"max-pods": "50"},
				"pause_image": "registry.k8s.io/pause:3.10\n",
				"http_proxy":  "http://proxy:3128\r",
				"https_proxy": "http://proxy\t:3128",
				"no_proxy":    "localhost\x00",
			})
			require.Error(t, err)
			for _, want := range []string{
				`node_labels["node-role.kubernetes.io/worker"]: the NodeRestriction admission plugin forbids`,
				`node_labels["node-restriction.kubernetes.io/pool"]: the NodeRestriction admission plugin forbids`,
				`node_labels["example.com/bad"]: a valid label must be`,
				`kubelet_extra_args["v"]: the value of --v contains whitespace`,
				`kubelet_extra_args["node-labels"]: use labels / taints instead of node-labels`,
				`kubelet_extra_args["root-dir"]: the value of --root-dir contains '\\'`,
				"pause_image: contains a control character",
				"http_proxy: contains a control character",
				"https_proxy: contains a control character",
				"no_proxy: contains a control character",
			} {
				assert.Contains(t, err.Error(), want)
			}
			assert.NotContains(t, err.Error(), "example.com/ok")
			assert.NotContains(t, err.Error(), "max-pods")
		})
	}
}

func TestUnknownVersionsNameTheirKey(t *testing.T) {
	_, err := versions.LookupKubernetes("v1.20.0")
	require.ErrorContains(t, err, `kubernetes_version: v1.20.0 is a release of v1.20, which is not in kubenode-bake's version table; `+
		`allowed: any release vX.Y.Z of the minor releases v1.30, v1.31, v1.32, v1.33, v1.34, v1.35`)
	_, err = versions.LookupContainerd("0.1")
	require.ErrorContains(t, err, "containerd_version")
	_, err = versions.LookupCNIPlugins("v0.0.1")
	require.ErrorContains(t, err, "cni_plugins_version")
	k, err := versions.LookupKubernetes("")
	require.NoError(t, err)
	assert.Equal(t, versions.Defaults.Kubernetes, k.Version, "empty is the default")
}

func sum(data string) string {
	h := sha256.Sum256([]byte(data))
	return hex.EncodeToString(h[:])
}

func TestPrepareChecksBridgeSubnet(t *testing.T) {
	for subnet, want := range map[string]string{
		"10.85.0/16":     "is not a CIDR",
		"fd00:85::/64":   "is not IPv4",
		"10.85.0.5/16":   "write 10.85.0.0/16",
		"10.85.0.0/31":   "leaves no address for a pod",
		"10.244.1.0/24":  "",
		"192.168.8.0/30": "",
	} {
		var c Config
		err := c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "cni": "bridge", "bridge_subnet": subnet})
		if want == "" {
			assert.NoError(t, err, subnet)
			continue
		}
		require.Error(t, err, subnet)
		assert.Contains(t, err.Error(), "bridge_subnet: ", subnet)
		assert.Contains(t, err.Error(), want, subnet)
	}
}

// `packer validate` refuses a version the table does not know, naming the
// key and the known releases, for each of the three version keys at once.
func TestPrepareRefusesUnknownVersions(t *testing.T) {
	var c Config
	err := c.Prepare(map[string]any{
		"download_cache_dir":  t.TempDir(),
		"kubernetes_version":  "v1.20.0",
		"containerd_version":  "0.1",
		"cni_plugins_version": "v0.0.1",
	})
	require.Error(t, err)
	for _, want := range []string{
		`kubernetes_version: v1.20.0 is a release of v1.20, which is not in kubenode-bake's version table; allowed: any release vX.Y.Z of the minor releases ` + versions.KubernetesMinors[0].Minor + ", ",
		`containerd_version: "0.1" is not a release version X.Y.Z; allowed: any release X.Y.Z of the minor releases ` + versions.ContainerdMinors[0].Minor + ", ",
		`cni_plugins_version: v0.0.1 is a release of v0, which is not in kubenode-bake's version table; allowed: any release vX.Y.Z of the major releases ` + versions.CNIPluginsMajors[0].Major,
	} {
		assert.Contains(t, err.Error(), want)
	}
}

// Any patch release of a known minor passes `packer validate` (Prepare),
// on either guest OS, with the default containerd and CNI plugins; the
// release asked for is the one installed.
func TestPrepareAcceptsAnyPatchReleaseOfAKnownMinor(t *testing.T) {
	for _, v := range []string{"v1.30.14", "v1.31.0", "v1.32.9", "v1.33.13", "v1.34.3", "v1.35.4", "v1.36.0", "v1.37.2"} {
		for _, guest := range []string{"linux", "windows", ""} {
			var c Config
			require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": guest, "kubernetes_version": v}), "%s on %q", v, guest)
			plan, arts, err := c.linuxPlan()
			require.NoError(t, err)
			assert.Equal(t, v, plan.KubernetesVersion)
			assert.Contains(t, arts[0].URL, "/release/"+v+"/")
		}
	}
	// Every minor takes the joiner: it writes the JoinConfiguration in the
	// API the node's kubeadm reads (v1beta3 for v1.30, v1beta4 from v1.31).
	for _, m := range versions.KubernetesMinors {
		for _, joiner := range []bool{true, false} {
			var c Config
			require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "kubernetes_version": m.Minor + ".0", "install_joiner": joiner}), "%s, install_joiner = %t", m.Minor, joiner)
		}
	}
	// containerd's matrix for v1.34: 2.1.3+, 2.0.6+, 1.7.28+; newer minors pass.
	for _, v := range []string{"1.7.28", "2.0.7", "2.1.4", "2.2.1", "2.3.7"} {
		var c Config
		require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "kubernetes_version": "v1.34.3", "containerd_version": v, "cni_plugins_version": "v1.7.1"}), v)
	}
}

// `packer validate` takes kubernetes_version = "v1.36.0" with containerd
// 2.3, and refuses containerd 1.7 for it (containerd recommends 2.2.0+ and
// 2.3.0+ only); the table's crictl for it is v1.36.0.
func TestPrepareAcceptsKubernetes136(t *testing.T) {
	var c Config
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "kubernetes_version": "v1.36.0", "containerd_version": "2.3.7"}))
	assert.Empty(t, c.warnings, "v1.36 and 2.3 are in the table")
	plan, arts, err := c.linuxPlan()
	require.NoError(t, err)
	assert.Equal(t, "v1.36.0", plan.KubernetesVersion)
	assert.Equal(t, "registry.k8s.io/pause:3.10.2", plan.PauseImage)
	assert.Equal(t, "v1.36.0", plan.CrictlVersion)
	assert.Equal(t, "2.3.7", plan.ContainerdVersion)
	assert.True(t, slices.ContainsFunc(arts, func(a versions.Artifact) bool { return strings.Contains(a.URL, "/runc/releases/download/v1.5.2/") }), "containerd 2.3's runc")

	var old Config
	err = old.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "kubernetes_version": "v1.36.0", "containerd_version": "1.7.27"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "containerd_version 1.7.27 with kubernetes_version v1.36.0: containerd's Kubernetes support matrix does not list containerd 1.7.27 for Kubernetes v1.36 (it lists 2.3.0+, 2.2.0+)")
}

// allow_unlisted_version lets releases of minors the table lacks through
// `packer validate`, on the nearest row's facts, with a warning naming
// both; without it they are refused, the error naming the key.
func TestPrepareAllowUnlistedVersion(t *testing.T) {
	newest := versions.KubernetesMinors[len(versions.KubernetesMinors)-1]
	newestCtr := versions.ContainerdMinors[len(versions.ContainerdMinors)-1]
	newestCrictl := versions.CrictlRows[len(versions.CrictlRows)-1]
	raw := map[string]any{"kubernetes_version": "v1.99.2", "containerd_version": "9.4.1", "crictl_version": "v1.99.0"}

	var refused Config
	err := refused.Prepare(raw, map[string]any{"download_cache_dir": t.TempDir()})
	require.Error(t, err)
	for _, want := range []string{
		"kubernetes_version: v1.99.2 is a release of v1.99, which is not in kubenode-bake's version table; allowed: ",
		"containerd_version: 9.4.1 is a release of 9.4, which is not in kubenode-bake's version table; allowed: ",
		"crictl_version: v1.99.0 is a release of v1.99, which is not in kubenode-bake's version table; allowed: ",
		"or any release with allow_unlisted_version = true",
	} {
		assert.Contains(t, err.Error(), want)
	}

	for _, guest := range []string{"linux", "windows"} {
		var c Config
		require.NoError(t, c.Prepare(raw, map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": guest, "allow_unlisted_version": true}), guest)
		assert.Equal(t, []string{
			"kubernetes_version v1.99.2: v1.99 is not in kubenode-bake's version table; using " + newest.Minor + "'s facts (pause image " + newest.PauseImage +
				", a kubelet without --pod-infra-container-image, containerd config versions 3)",
			"containerd_version 9.4.1: 9.4 is not in kubenode-bake's version table; using " + newestCtr.Minor + "'s facts (config version 3, CNI bin_dirs, runc " + newestCtr.RuncVersion + ")",
			"crictl_version v1.99.0: v1.99 is not in kubenode-bake's version table; using " + newestCrictl.Minor + "'s facts (the crictl-<version>-<os>-amd64.tar.gz release assets)",
		}, c.warnings, guest)
	}

	// The release asked for is the one installed, on the row's facts.
	var c Config
	require.NoError(t, c.Prepare(raw, map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "linux", "allow_unlisted_version": true}))
	plan, arts, err := c.linuxPlan()
	require.NoError(t, err)
	assert.Equal(t, "v1.99.2", plan.KubernetesVersion)
	assert.Equal(t, newest.PauseImage, plan.PauseImage)
	assert.Equal(t, "9.4.1", plan.ContainerdVersion)
	assert.Equal(t, "v1.99.0", plan.CrictlVersion)
	assert.Contains(t, arts[0].URL, "/release/v1.99.2/")

	win, err := versions.LookupWindows("")
	require.NoError(t, err)
	var w Config
	require.NoError(t, w.Prepare(raw, map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "windows", "allow_unlisted_version": true}))
	wplan, _, err := w.windowsPlan(win)
	require.NoError(t, err)
	assert.Equal(t, "v1.99.2", wplan.Kubernetes.Version)
	assert.Equal(t, newest.Minor, wplan.Kubernetes.Minor)
	assert.Equal(t, newestCtr.Minor, wplan.Containerd.Minor)

	// crictl_version unset: the row the Kubernetes release stands on.
	var d Config
	require.NoError(t, d.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "kubernetes_version": "v1.99.2", "allow_unlisted_version": true}))
	assert.Contains(t, d.warnings, "crictl_version unset: Kubernetes v1.99 is not in kubenode-bake's version table; installing "+newestCrictl.Minor+"'s cri-tools release "+newestCrictl.Version+" (crictl_version sets another)")
	dplan, _, err := d.linuxPlan()
	require.NoError(t, err)
	assert.Equal(t, newestCrictl.Version, dplan.CrictlVersion)

	// Pre-releases stay refused.
	var pre Config
	err = pre.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "kubernetes_version": "v1.99.0-rc.1", "allow_unlisted_version": true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `kubernetes_version: "v1.99.0-rc.1" is a pre-release`)
}

// The combinations the table says do not work fail `packer validate`,
// naming the key and what to do instead.
func TestPrepareRefusesReleasesThatDoNotWorkTogether(t *testing.T) {
	var flag Config
	err := flag.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "kubernetes_version": "v1.35.4",
		"kubelet_extra_args": map[string]string{"pod-infra-container-image": "registry.example/pause:1"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `kubelet_extra_args["pod-infra-container-image"]: the kubelet of Kubernetes v1.35 has no such flag and would not start`)
	var older Config
	require.NoError(t, older.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "kubernetes_version": "v1.34.3",
		"kubelet_extra_args": map[string]string{"pod-infra-container-image": "registry.example/pause:1"}}), "v1.34's kubelet still takes the flag")
}

// What a Windows bake refuses is refused by `packer validate` when the
// template says the guest runs Windows, not after the guest has booted.
func TestPrepareRefusesWhatWindowsCannotDo(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string
	}{
		{"cni", "bridge", `cni: "bridge" is not available on Windows`},
		{"containerd_source", "package", `containerd_source: "package" is Linux-only`},
	} {
		t.Run(tc.key, func(t *testing.T) {
			var c Config
			err := c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "windows", tc.key: tc.value})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)

			// The same value is fine for Linux, and for a guest whose OS is
			// asked at build time (the Windows flow refuses it then), with
			// a Kubernetes release a distribution's containerd serves
			// (Ubuntu 24.04's, 2.2.1, serves v1.36).
			for _, guest := range []string{"linux", ""} {
				var c Config
				require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": guest, tc.key: tc.value,
					"kubernetes_version": "v1.36.0", "containerd_version": "2.2.1"}),
					"guest_os_type=%q", guest)
			}
		})
	}
}

// A containerd release the matrix lists but whose config version the
// minor's row does not take (rows that disagree) is refused, naming only
// the listed releases whose config version it takes.
func TestPrepareRefusesAContainerdTheMinorDoesNotTake(t *testing.T) {
	saved := versions.KubernetesMinors
	t.Cleanup(func() { versions.KubernetesMinors = saved })
	versions.KubernetesMinors = slices.Clone(saved)
	newest := &versions.KubernetesMinors[len(versions.KubernetesMinors)-1]
	newest.ContainerdConfigVersions = []int{3}
	newest.Containerd = []string{"2.4.0", "1.7.20"}
	v := newest.Minor + ".1"

	var c Config
	err := c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "kubernetes_version": v, "containerd_version": "1.7.27"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "containerd_version: containerd 1.7.27 is not recommended for Kubernetes "+newest.Minor+" (config version 2); use one of 2.4.0+")
	var ok Config
	require.NoError(t, ok.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "kubernetes_version": v, "containerd_version": "2.4.2"}))
}

// v1.36 with containerd 1.7: one error, containerd's matrix, suggesting
// only the releases it lists for v1.36.
func TestPrepareSuggestsOnlyTheMatrixReleases(t *testing.T) {
	var c Config
	err := c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "kubernetes_version": "v1.36.0", "containerd_version": "1.7.28"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "containerd_version 1.7.28 with kubernetes_version v1.36.0: containerd's Kubernetes support matrix does not list containerd 1.7.28 for Kubernetes v1.36 (it lists 2.3.0+, 2.2.0+)")
	for _, not := range []string{"2.0.", "2.1.", "2.4.", "config version"} {
		assert.NotContains(t, err.Error(), not)
	}
}

// `packer validate` holds a tarball containerd to containerd's Kubernetes
// support matrix: for v1.37 it lists 2.4.0+ and 2.3.0+, so 2.4 and 2.3 pass
// and 2.2 (config version 3 still) and older are refused, naming both keys
// and the releases to use.
func TestPrepareHoldsContainerdToItsMatrix(t *testing.T) {
	for _, tc := range []struct {
		k8s, ctr string
		ok       bool
	}{
		{"v1.37.2", "2.4.2", true},
		{"v1.37.2", "2.3.7", true},
		{"v1.37.2", "2.3.0", true},
		{"v1.37.2", "2.2.9", false},
		{"v1.37.2", "2.2.0", false},
		{"v1.37.2", "2.1.5", false},
		{"v1.37.2", "2.0.7", false},
		{"v1.36.0", "2.4.2", true}, // newer than every minor listed
		{"v1.36.0", "2.2.0", true},
		{"v1.36.0", "2.1.4", false}, // older than every minor listed
		{"v1.35.4", "2.1.4", false}, // below 2.1.5+
		{"v1.35.4", "2.1.5", true},
		{"v1.34.3", "1.7.27", false}, // below 1.7.28+
		{"v1.34.3", "1.7.28", true},
	} {
		for _, guest := range []string{"linux", "windows"} {
			var c Config
			err := c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": guest, "kubernetes_version": tc.k8s, "containerd_version": tc.ctr})
			if tc.ok {
				assert.NoError(t, err, "%s with containerd %s on %s", tc.k8s, tc.ctr, guest)
				continue
			}
			require.Error(t, err, "%s with containerd %s on %s", tc.k8s, tc.ctr, guest)
			k, kerr := versions.LookupKubernetes(tc.k8s)
			require.NoError(t, kerr)
			assert.Contains(t, err.Error(), "containerd_version "+tc.ctr+" with kubernetes_version "+tc.k8s+
				": containerd's Kubernetes support matrix does not list containerd "+tc.ctr+" for Kubernetes "+k.Minor+
				" (it lists "+strings.Join(k.Containerd, "+, ")+"+); set containerd_version to one of those")
		}
	}
}

// The package path at packer validate: containerd_version, when set, is
// the release the distribution's package is built from, held to
// containerd's matrix for the Kubernetes minor; unset, every distribution
// the table knows to package containerd must package one the matrix lists
// (Debian 12's 1.6.20 is listed for no minor). A refusal names
// kubernetes_version, containerd_source and containerd_version and the
// matrix's releases; the tarball table's own lookup of containerd_version
// does not apply.
func TestPrepareHoldsThePackagedContainerdToItsMatrix(t *testing.T) {
	for _, tc := range []struct {
		k8s, ctr string
		// want are parts of the refusal; none: accepted.
		want []string
	}{
		{"v1.36.0", "", []string{`containerd_source = "package" with kubernetes_version v1.36.0 and containerd_version unset: ` +
			`containerd's Kubernetes support matrix lists 2.3.0+, 2.2.0+ for Kubernetes v1.36`,
			"(Debian 12: 1.6.20, not supported by v1.36; Ubuntu 24.04: 2.2.1; Rocky Linux 9: no containerd package)",
			"set containerd_version to the containerd release your distribution's package is built from"}},
		{"v1.36.0", "1.6", []string{`containerd_source = "package" with kubernetes_version v1.36.0 and containerd_version 1.6: ` +
			`containerd's Kubernetes support matrix lists 2.3.0+, 2.2.0+ for Kubernetes v1.36, and 1.6 is not one`}},
		{"v1.36.0", "1.6.20", []string{`containerd_source = "package" with kubernetes_version v1.36.0 and containerd_version 1.6.20: ` +
			`containerd's Kubernetes support matrix lists 2.3.0+, 2.2.0+ for Kubernetes v1.36, and 1.6.20 is not one`}},
		{"v1.36.0", "2.1.4", []string{`containerd_source = "package" with kubernetes_version v1.36.0 and containerd_version 2.1.4: ` +
			`containerd's Kubernetes support matrix lists 2.3.0+, 2.2.0+ for Kubernetes v1.36, and 2.1.4 is not one`}},
		{"v1.35.0", "", []string{"(Debian 12: 1.6.20, not supported by v1.35; Ubuntu 24.04: 2.2.1; Rocky Linux 9: no containerd package)"}},
		{"v1.37.2", "", []string{"(Debian 12: 1.6.20, not supported by v1.37; Ubuntu 24.04: 2.2.1, not supported by v1.37; Rocky Linux 9: no containerd package)"}},
		{"v1.36.0", "2.2", nil},
		{"v1.36.0", "2.2.1", nil},
		{"v1.35.0", "2.2", nil},
		{"v1.37.2", "2.3", nil},
		// Debian 12's package with containerd 1.7 from backports would
		// not be: 1.7.28+ is v1.35's.
		{"v1.35.0", "1.7", nil},
	} {
		for _, guest := range []string{"linux", ""} {
			raw := map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": guest, "kubernetes_version": tc.k8s, "containerd_source": "package"}
			if tc.ctr != "" {
				raw["containerd_version"] = tc.ctr
			}
			name := fmt.Sprintf("%s containerd_version %q guest_os_type %q", tc.k8s, tc.ctr, guest)
			var c Config
			err := c.Prepare(raw)
			if tc.want == nil {
				assert.NoError(t, err, name)
				assert.Empty(t, c.warnings, name)
				continue
			}
			if !assert.Error(t, err, name) {
				continue
			}
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w, name)
			}
			assert.NotContains(t, err.Error(), "containerd_version: ", "%s: the tarball table's lookup does not apply", name)
		}
	}
}

func TestPrepareWindowsUpdate(t *testing.T) {
	var c Config
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir()}))
	assert.False(t, c.WindowsUpdate, "off unless asked for")
	assert.Equal(t, 2*time.Hour, c.WindowsUpdateTimeout)

	c = Config{}
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "windows",
		"windows_update": true, "windows_update_timeout": "3h"}))
	win, err := versions.LookupWindows("")
	require.NoError(t, err)
	plan, _, err := c.windowsPlan(win)
	require.NoError(t, err)
	assert.True(t, plan.WindowsUpdate)
	assert.Equal(t, 3*time.Hour, plan.WindowsUpdateTimeout)

	c = Config{}
	err = c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "linux",
		"windows_update": true, "windows_update_timeout": "30s"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `windows_update: Windows Update is for Windows guests; remove windows_update for a Linux guest`)
	assert.Contains(t, err.Error(), "windows_update_timeout: 30s is less than a minute")
}

func TestPrepareWindowsAutomaticUpdates(t *testing.T) {
	win, err := versions.LookupWindows("")
	require.NoError(t, err)
	var c Config
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "windows"}))
	plan, _, err := c.windowsPlan(win)
	require.NoError(t, err)
	assert.False(t, plan.AutomaticUpdates, "automatic updates off on the nodes unless asked for")

	c = Config{}
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "windows", "windows_automatic_updates": true}))
	plan, _, err = c.windowsPlan(win)
	require.NoError(t, err)
	assert.True(t, plan.AutomaticUpdates)

	c = Config{}
	err = c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "linux", "windows_automatic_updates": true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `windows_automatic_updates: Windows' automatic updates are for Windows guests; remove windows_automatic_updates for a Linux guest`)
}

// The Windows kubelet's priority and reserves: the plan's defaults when
// unset, an empty reserve kept empty, every bad value named by its key.
func TestPrepareWindowsKubeletResources(t *testing.T) {
	win, err := versions.LookupWindows("")
	require.NoError(t, err)
	var c Config
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "windows"}))
	plan, _, err := c.windowsPlan(win)
	require.NoError(t, err)
	assert.Equal(t, "ABOVE_NORMAL_PRIORITY_CLASS", plan.KubeletPriorityClass)
	assert.Equal(t, map[string]string{"memory": "2Gi"}, plan.KubeletSystemReserved)
	assert.Empty(t, plan.KubeletKubeReserved)

	c = Config{}
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "windows",
		"kubelet_priority_class": "HIGH_PRIORITY_CLASS", "kubelet_system_reserved": map[string]string{},
		"kubelet_kube_reserved": map[string]string{"memory": "500Mi"}}))
	plan, _, err = c.windowsPlan(win)
	require.NoError(t, err)
	assert.Equal(t, "HIGH_PRIORITY_CLASS", plan.KubeletPriorityClass)
	assert.NotNil(t, plan.KubeletSystemReserved, "{} reserves nothing, unlike unset")
	assert.Empty(t, plan.KubeletSystemReserved)
	assert.Equal(t, map[string]string{"memory": "500Mi"}, plan.KubeletKubeReserved)

	for _, guest := range []string{"windows", ""} {
		c = Config{}
		err = c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": guest,
			"kubelet_priority_class": "high", "kubelet_kube_reserved": map[string]string{"memory": "lots"},
			"kubelet_extra_args": map[string]string{"kube-reserved": "memory=1Gi"}})
		require.Error(t, err, guest)
		assert.Contains(t, err.Error(), `kubelet_priority_class: "high" is not a priority class the kubelet knows`)
		assert.Contains(t, err.Error(), `kubelet_kube_reserved["memory"]: "lots" is not a quantity`)
		if guest == "windows" {
			assert.Contains(t, err.Error(), `kubelet_extra_args["kube-reserved"]: on Windows kubelet_kube_reserved sets it`)
		} else {
			assert.NotContains(t, err.Error(), `kubelet_extra_args`, "a Linux guest takes --kube-reserved there")
		}
	}
}

func TestPrepareNTPServers(t *testing.T) {
	win, err := versions.LookupWindows("")
	require.NoError(t, err)
	var c Config
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "windows", "ntp_servers": []string{"ntp.example.com", "192.0.2.123"}}))
	plan, _, err := c.windowsPlan(win)
	require.NoError(t, err)
	assert.Equal(t, []string{"ntp.example.com", "192.0.2.123"}, plan.NTPServers)

	c = Config{}
	err = c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "ntp_servers": []string{"ntp.example.com:123"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `ntp_servers[0]: "ntp.example.com:123" is neither a host name nor an IP address`)
}

func TestPrepareWindowsFeatures(t *testing.T) {
	win, err := versions.LookupWindows("")
	require.NoError(t, err)
	var c Config
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "windows",
		"windows_features": []string{"RemoteAccess", "RSAT-RemoteAccess-PowerShell", "Routing"}}))
	plan, _, err := c.windowsPlan(win)
	require.NoError(t, err)
	assert.Equal(t, []string{"RemoteAccess", "RSAT-RemoteAccess-PowerShell", "Routing"}, plan.WindowsFeatures)

	c = Config{}
	err = c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "windows_features": []string{"Routing", "containers", "Remote Access", "routing", "Hyper-V"}})
	require.Error(t, err)
	for _, want := range []string{
		`windows_features[1]: containers is installed in every image; remove it`,
		`windows_features[2]: "Remote Access" is not a Windows feature name`,
		`windows_features[3]: "routing" is listed twice`,
		`windows_features[4]: Hyper-V comes with hyperv (auto, on or off); remove it and set hyperv`,
	} {
		assert.Contains(t, err.Error(), want)
	}
}
