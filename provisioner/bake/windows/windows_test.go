// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// The golden cases take their versions from the table, never from
// literals: a new row changes the goldens through -update, not the tests.

func mustWindows(t *testing.T, v string) versions.WindowsRelease {
	t.Helper()
	w, err := versions.LookupWindows(v)
	require.NoError(t, err)
	return w
}

// newestContainerd is the default containerd release when it writes the
// given config version, else the first release (x.y.0) of the newest row
// that does.
func newestContainerd(t *testing.T, configVersion int) versions.ContainerdRelease {
	t.Helper()
	if c, err := versions.LookupContainerd(""); err == nil && c.ConfigVersion == configVersion {
		return c
	}
	for _, r := range slices.Backward(versions.ContainerdMinors) {
		if r.ConfigVersion == configVersion {
			c, err := versions.LookupContainerd(r.Minor + ".0")
			require.NoError(t, err)
			return c
		}
	}
	t.Fatalf("no containerd row with config version %d", configVersion)
	return versions.ContainerdRelease{}
}

// newestWithoutLogRotation is the first release of the newest Kubernetes
// minor whose kube-log-runner cannot rotate the log (the bake schedules a
// task instead) and which takes containerd config version 2.
func newestWithoutLogRotation(t *testing.T) versions.KubernetesRelease {
	t.Helper()
	for _, r := range slices.Backward(versions.KubernetesMinors) {
		if !r.KubeLogRunnerRotation && slices.Contains(r.ContainerdConfigVersions, 2) {
			k, err := versions.LookupKubernetes(r.Minor + ".0")
			require.NoError(t, err)
			return k
		}
	}
	t.Fatal("no Kubernetes row without kube-log-runner rotation")
	return versions.KubernetesRelease{}
}

func basePlan(t *testing.T) Plan {
	k8s, err := versions.LookupKubernetes("")
	require.NoError(t, err)
	cni, err := versions.LookupCNIPlugins("")
	require.NoError(t, err)
	crictl, err := versions.LookupCrictl("", k8s)
	require.NoError(t, err)
	firstBoot, err := autounattend.RenderWindowsFirstBoot(autounattend.WindowsFirstBoot{Password: "Clone-Admin-1!"})
	require.NoError(t, err)
	return Plan{
		Windows: mustWindows(t, ""), Kubernetes: k8s, Containerd: newestContainerd(t, 3), CNIPlugins: cni,
		DefenderExclusions: true, InstallJoiner: true, Generalize: true, FirstBoot: firstBoot,
		InstallCrictl: true, Crictl: crictl, CheckImages: []string{"registry.example/preloaded:1.0"},
	}
}

func goldenPlans(t *testing.T) map[string]Plan {
	var err error
	old := basePlan(t)
	old.Windows = mustWindows(t, "2019")
	old.Containerd = newestContainerd(t, 2)
	// A kube-log-runner without its own rotation: the scheduled task.
	old.Kubernetes = newestWithoutLogRotation(t)
	old.Crictl, err = versions.LookupCrictl("", old.Kubernetes)
	require.NoError(t, err)
	old.HyperV = "off"
	old.Generalize = false
	old.Proxy = node.Proxy{HTTP: "http://proxy.example:3128", HTTPS: "http://user:it's@proxy.example:3128", No: "10.0.0.0/8,.cluster.local"}
	old.NodeLabels = map[string]string{"example.com/pool": "windows-2019"}
	// Without crictl: the self-check asks containerd with ctr.exe.
	old.InstallCrictl, old.CheckImages = false, nil
	// windows_automatic_updates = true: no automatic-updates step.
	old.AutomaticUpdates = true

	// The newest Kubernetes minor's first release.
	desktop := basePlan(t)
	desktop.Windows = mustWindows(t, "2022")
	newest, err := versions.LookupKubernetes(versions.KubernetesMinors[len(versions.KubernetesMinors)-1].Minor + ".0")
	require.NoError(t, err)
	desktop.Kubernetes = newest

	current := basePlan(t)
	current.Windows = mustWindows(t, "2025")
	current.HyperV = "on"
	current.DefenderExclusions = false
	current.KubeletExtraArgs = map[string]string{"v": "2", "max-pods": "60"}
	current.NTPServers = []string{"time.example.com", "192.0.2.123"}
	// Calico for BGP.
	current.WindowsFeatures = []string{"RemoteAccess", "RSAT-RemoteAccess-PowerShell", "Routing"}
	current.KubeletPriorityClass = "HIGH_PRIORITY_CLASS"
	current.KubeletSystemReserved = map[string]string{"memory": "3Gi", "cpu": "500m"}
	current.KubeletKubeReserved = map[string]string{"memory": "512Mi", "pid": "1000"}
	current.NodeLabels = map[string]string{"example.com/role": "worker", "node.kubernetes.io/instance-type": "kubenode"}
	// clone_admin_password empty: each clone makes its own.
	current.RandomClonePassword = true
	return map[string]Plan{"2019-config-v2": old, "2022-desktop": desktop, "2025-config-v3": current, "2025-cluster-api": clusterAPIPlan(t)}
}

// clusterAPIPlan is a Windows image for Cluster API's bootstrap
// (bootstrap = "cluster-api"): cloudbase-init, no joiner.
func clusterAPIPlan(t *testing.T) Plan {
	p := basePlan(t)
	firstBoot, err := autounattend.RenderWindowsFirstBoot(autounattend.WindowsFirstBoot{Password: "Clone-Admin-1!", Commands: []string{CloudbaseInitUnattendCommand}})
	require.NoError(t, err)
	p.FirstBoot = firstBoot
	p.InstallJoiner = false
	p.ClusterAPI = true
	p.CloudbaseInit = versions.CloudbaseInit
	p.RandomClonePassword = true
	return p
}

func testUploads(p Plan) []Upload {
	p = p.WithDefaults()
	f := p.Files
	var out []Upload
	for name, file := range map[string]string{
		versions.ArtifactKubelet: f.Kubelet, versions.ArtifactKubeadm: f.Kubeadm, versions.ArtifactKubectl: f.Kubectl, versions.ArtifactKubeLogRunner: f.KubeLogRunner,
		versions.ArtifactContainerd: f.ContainerdTarball, versions.ArtifactCNIPlugins: f.CNITarball, versions.ArtifactJoiner: f.Joiner,
		versions.ArtifactCrictl:        p.crictlFile(),
		versions.ArtifactCloudbaseInit: f.CloudbaseInit,
	} {
		if name == versions.ArtifactCrictl && !p.InstallCrictl || name == versions.ArtifactJoiner && !p.InstallJoiner || name == versions.ArtifactCloudbaseInit && !p.ClusterAPI {
			continue
		}
		out = append(out, Upload{Name: name, Local: "/build/" + file, Remote: p.Staging + `\` + file, SHA256: fmt.Sprintf("%064x", len(file))})
	}
	slices.SortFunc(out, func(a, b Upload) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// fetchUploads gives each upload the URL and the shown origin of a fixed
// artifact server, as Bake does with a real one.
func fetchUploads(ups []Upload) []Upload {
	out := slices.Clone(ups)
	for i := range out {
		base := path.Base(remote.UploadPath(out[i].Remote))
		out[i].URL = "http://192.168.122.1:41234/00112233445566778899aabbccddeeff/" + base
		out[i].Shown = "http://192.168.122.1:41234/.../" + base
	}
	return out
}

// renderedWindows is every script and config of every case, by golden path.
func renderedWindows(t *testing.T) map[string][]byte {
	out := map[string][]byte{}
	for name, p := range goldenPlans(t) {
		steps, err := Steps(p)
		require.NoError(t, err, name)
		for i, s := range steps {
			out[fmt.Sprintf("windows/%s/%02d-%s.ps1", name, i+1, s.Name)] = s.Script
		}
		out[fmt.Sprintf("windows/%s/00-verify-artifacts.ps1", name)] = VerifyScript(testUploads(p))
		out[fmt.Sprintf("windows/%s/00-fetch-artifacts.ps1", name)] = FetchScript(fetchUploads(testUploads(p)))
		if p.ClusterAPI {
			service, unattend := p.cloudbaseInitConfigs()
			out[fmt.Sprintf("windows/%s/cloudbase-init/cloudbase-init.conf", name)] = []byte(service.render(p.CloudbaseInit.Version))
			out[fmt.Sprintf("windows/%s/cloudbase-init/cloudbase-init-unattend.conf", name)] = []byte(unattend.render(p.CloudbaseInit.Version))
			out[fmt.Sprintf("windows/%s/StartKubelet.ps1", name)] = []byte(p.kubeletWrapperScript())
		}
		if task := kubeletLogTaskFor(p); task != nil {
			out[fmt.Sprintf("windows/%s/kubenode-rotate-kubelet-log.ps1", name)] = []byte(task.ScriptText)
		}
		// The answer file has its own goldens in autounattend.
		for _, f := range FirstBootFiles(p) {
			if f.Path != firstBootAnswer {
				out[fmt.Sprintf("windows/%s/first-boot/%s", name, path.Base(strings.ReplaceAll(f.Path, `\`, "/")))] = f.Content
			}
		}
	}
	// config.toml of the 2019 case (version 2) and the 2025 case (version 3,
	// with the build's minimum pause image).
	for _, name := range []string{"2019-config-v2", "2025-config-v3"} {
		p := goldenPlans(t)[name].WithDefaults()
		out[fmt.Sprintf("windows/containerd-config-v%d.toml", p.Containerd.ConfigVersion)] = []byte(ContainerdConfig(p.Containerd, p.PauseImage))
	}
	return out
}

func TestWindowsGolden(t *testing.T) {
	for name, got := range renderedWindows(t) {
		t.Run(name, func(t *testing.T) { golden.Assert(t, name, got) })
	}
	if *golden.Update {
		return
	}
	// No stale goldens: every file under testdata/windows is rendered.
	rendered := renderedWindows(t)
	require.NoError(t, filepath.WalkDir(filepath.Join("testdata", "windows"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("testdata", p)
		assert.Contains(t, rendered, filepath.ToSlash(rel), "stale golden file: remove it")
		return nil
	}))
}

func TestWindowsStepsOrderAndOptionalSteps(t *testing.T) {
	names := func(p Plan) []string {
		steps, err := Steps(p)
		require.NoError(t, err)
		var out []string
		for _, s := range steps {
			out = append(out, s.Name)
		}
		return out
	}
	p := basePlan(t)
	assert.Equal(t, []string{"automatic-updates", "containers-feature", "registry", "time-sync", "containerd", "cni", "kubelet", "crictl", "defender", "joiner", "permissions", "self-check", "cleanup", "sysprep"}, names(p))
	p.DefenderExclusions, p.InstallJoiner, p.Generalize, p.InstallCrictl = false, false, false, false
	assert.Equal(t, []string{"automatic-updates", "containers-feature", "registry", "time-sync", "containerd", "cni", "kubelet", "permissions", "self-check", "cleanup"}, names(p))
	p.AutomaticUpdates = true
	assert.Equal(t, []string{"containers-feature", "registry", "time-sync", "containerd", "cni", "kubelet", "permissions", "self-check", "cleanup"}, names(p), "windows_automatic_updates = true")
}

func TestWindowsScriptsAreCRLFWithABOM(t *testing.T) {
	for name, got := range renderedWindows(t) {
		if !strings.HasSuffix(name, ".ps1") {
			continue
		}
		s := string(got)
		if base := path.Base(name); base == "StartKubelet.ps1" || base == "kubenode-rotate-kubelet-log.ps1" {
			// Written by Set-KubenodeFile and compared as text, which drops a
			// BOM: no BOM, and ASCII only, which any code page reads alike.
			assert.True(t, strings.HasPrefix(s, "# kubenode-bake: "), name)
			assert.False(t, strings.ContainsFunc(s, func(r rune) bool { return r > 127 }), name)
			assert.Contains(t, s, "$ErrorActionPreference = 'Stop'\r\n", name)
			continue
		}
		assert.True(t, strings.HasPrefix(s, "\uFEFF# kubenode-bake: "), name)
		// Multi-line literals (config.toml, joiner.yaml) keep LF inside the quotes.
		assert.Contains(t, s, "$ErrorActionPreference = 'Stop'\r\n", name)
	}
}

func TestWindowsContainerdConfigVersions(t *testing.T) {
	v2 := ContainerdConfig(newestContainerd(t, 2), "registry.example/pause:9")
	assert.Contains(t, v2, "version = 2\n")
	assert.Contains(t, v2, "[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.example/pause:9\"")
	assert.Contains(t, v2, "[plugins.\"io.containerd.grpc.v1.cri\".cni]\n  bin_dir = 'c:/opt/cni/bin'\n  conf_dir = 'c:/etc/cni/net.d'\n")
	assert.Contains(t, v2, "root = 'C:\\ProgramData\\containerd\\root'\nstate = 'C:\\ProgramData\\containerd\\state'\n")
	assert.Contains(t, v2, "address = '\\\\.\\pipe\\containerd-containerd'")
	v3 := ContainerdConfig(newestContainerd(t, 3), `odd"image\`)
	assert.Contains(t, v3, "version = 3\n")
	assert.Contains(t, v3, "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"odd\\\"image\\\\\"")
	assert.Contains(t, v3, "[plugins.'io.containerd.cri.v1.runtime'.cni]\n  bin_dirs = ['c:/opt/cni/bin']\n")
	assert.NotContains(t, v3, "grpc.v1.cri")
}

// The 2025 default pause image is the build's minimum, above kubeadm's.
func TestWindowsPlanDefaultsPauseToTheBuildsMinimum(t *testing.T) {
	p := basePlan(t)
	p.Windows = mustWindows(t, "2025")
	p = p.WithDefaults()
	assert.Equal(t, versions.UpstreamPause+":"+p.Windows.MinPause, p.PauseImage)
	assert.Zero(t, versions.CompareVersions(p.Windows.MinPause, p.Windows.MinPause))
	p = basePlan(t)
	p.Windows = mustWindows(t, "2019")
	assert.Equal(t, p.Kubernetes.PauseImage, p.WithDefaults().PauseImage, "kubeadm's pause has a 2019 image")
}

func TestWindowsPlanValidation(t *testing.T) {
	p := basePlan(t)
	p.Windows = mustWindows(t, "2025")
	p.PauseImage = versions.KubernetesMinors[0].PauseImage // the oldest minor's: no 2025 image
	p.HyperV = "maybe"
	p.CNI = "bridge"
	p.Proxy.HTTP = "http://proxy\n:3128"
	p.NodeLabels = map[string]string{"kubernetes.io/role": "worker"}
	p.KubeletExtraArgs = map[string]string{"node-labels": "a=b"}
	p.Staging = `relative\dir`
	err := p.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"pause_image: " + p.PauseImage + " has no image for Windows Server 2025",
		"the minimum is " + versions.UpstreamPause + ":" + p.Windows.MinPause,
		`hyperv: "maybe" is not auto, on or off`,
		`cni: "bridge" is not available on Windows`,
		"http_proxy: contains a control character",
		"node_labels / kubelet_extra_args: the joiner would refuse its configuration",
		"NodeRestriction",
		"use labels / taints instead of node-labels",
		`staging directory "relative\\dir"`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = Steps(p)
	require.Error(t, err, "nothing is rendered from a bad plan")

	// A mirror's pause image is not checked (it tags its own way).
	p = basePlan(t)
	p.Windows = mustWindows(t, "2025")
	p.PauseImage = "mirror.example/pause:1.0"
	assert.NoError(t, p.Validate())
	p.HyperV, p.CNI = "unknown", "calico"
	err = p.Validate()
	assert.ErrorContains(t, err, `hyperv: "unknown" is not auto, on or off`)
	assert.ErrorContains(t, err, `cni: "calico" is not none or bridge`)
}

func TestWindowsServiceRefusesQuotesPowerShellCannotPass(t *testing.T) {
	err := serviceSpec{Name: "x", Display: "x", Argv: []string{`C:\Program Files\x.exe`}, Start: "auto"}.check()
	require.ErrorContains(t, err, "needs quoting that Windows PowerShell 5.1 cannot pass to sc.exe")
	require.NoError(t, serviceSpec{Name: units.KubeletServiceName, Display: "kubelet", Argv: units.WindowsKubeletArgs(true), Start: "auto"}.check())
}

// The kubelet service runs exactly the command line the joiner later
// extends with kubeadm's flags, and the joiner's service its own.
func TestWindowsServicesUseTheUnitsCommandLines(t *testing.T) {
	steps, err := Steps(basePlan(t))
	require.NoError(t, err)
	byName := map[string]string{}
	for _, s := range steps {
		byName[s.Name] = string(s.Script)
	}
	assert.Contains(t, byName["kubelet"], "$binPath = '"+units.CommandLine(basePlan(t).kubeletServiceArgv())+"'\r\n")
	assert.Contains(t, byName["kubelet"], "'depend=', 'containerd'")
	assert.Contains(t, byName["joiner"], "$binPath = '"+units.CommandLine(units.JoinerServiceArgs())+"'\r\n")
	assert.Contains(t, byName["joiner"], "'start=', 'disabled'")
	assert.Contains(t, byName["joiner"], "'failureflag', '"+units.JoinerServiceName+"', '1'")
	assert.Contains(t, byName["joiner"], "Set-KubenodeFile -Path '"+joinerConf+"'")
}

// The baked joiner configuration is the joiner's own type: it reads back,
// and carries the pause image for kubeadm's --pod-infra-container-image.
func TestWindowsJoinerConfig(t *testing.T) {
	p := basePlan(t)
	// The newest minor whose kubelet still has the flag.
	for _, r := range slices.Backward(versions.KubernetesMinors) {
		if r.PodInfraContainerImageFlag {
			k, err := versions.LookupKubernetes(r.Minor + ".0")
			require.NoError(t, err)
			p.Kubernetes = k
			break
		}
	}
	require.True(t, p.Kubernetes.PodInfraContainerImageFlag, "a minor whose kubelet has --pod-infra-container-image")
	p.NodeLabels = map[string]string{"example.com/pool": "win"}
	p = p.WithDefaults()
	data, err := p.joinerConfig()
	require.NoError(t, err)
	s := string(data)
	assert.Contains(t, s, "criSocket: "+units.WindowsCRIEndpoint)
	assert.Contains(t, s, "example.com/pool: win")
	assert.Contains(t, s, "name: pod-infra-container-image\n  value: "+p.PauseImage)
	p.KubeletExtraArgs = map[string]string{"pod-infra-container-image": "mine.example/pause:1"}
	data, err = p.joinerConfig()
	require.NoError(t, err)
	assert.Contains(t, string(data), "value: mine.example/pause:1", "the user's value wins")
}

// Install-WindowsFeature Hyper-V refuses a guest without nested
// virtualization: the role goes in through dism, whose exit code 3010
// (restart required) is a success that restarts Windows, and the Hyper-V
// PowerShell module through Install-WindowsFeature.
func TestWindowsHyperVRoleUsesDism(t *testing.T) {
	const dism = `-FilePath 'dism.exe' -Arguments @('/online', '/enable-feature', '/featurename:Microsoft-Hyper-V', '/all', '/norestart') -Success @(0, 3010)`
	for _, mode := range []string{"on", "auto", "off"} {
		t.Run(mode, func(t *testing.T) {
			p := basePlan(t)
			p.HyperV, p.AutomaticUpdates = mode, true
			steps, err := Steps(p)
			require.NoError(t, err)
			require.Equal(t, stepContainersFeature, steps[0].Name)
			script := string(steps[0].Script)
			assert.NotRegexp(t, `(?i)\$features \+= @\([^)]*'Hyper-V'`, script, "Install-WindowsFeature Hyper-V checks the CPU")
			if mode == "off" {
				assert.NotContains(t, script, "dism.exe")
				assert.NotContains(t, script, hyperVPowerShell)
				return
			}
			assert.Contains(t, script, "$features += @('Hyper-V-PowerShell')")
			assert.Contains(t, script, dism)
			restartOn3010 := regexp.MustCompile(`if \(\$code -eq 3010\) \{\r\n[^}]*\$restart = \$true`)
			assert.Regexp(t, restartOn3010, script, "dism's 3010 asks for the restart")
			assert.Less(t, strings.Index(script, "dism.exe"), strings.Index(script, restartMarker),
				"the role is enabled before the restart marker is printed")
			if mode == "auto" {
				assert.Contains(t, script, "SecondLevelAddressTranslationExtensions", "auto checks SLAT")
				assert.Less(t, strings.Index(script, "SecondLevelAddressTranslationExtensions"), strings.Index(script, "$hyperV = $true"))
			} else {
				assert.NotContains(t, script, "SecondLevelAddressTranslationExtensions", "on forces it")
			}
		})
	}
}
