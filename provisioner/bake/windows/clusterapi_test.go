// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

func stepNames(steps []node.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Name)
	}
	return out
}

// A Cluster API image installs cloudbase-init before sysprep and has no
// joiner step; everything else of the Windows bake stays.
func TestClusterAPISteps(t *testing.T) {
	capi := clusterAPIPlan(t)
	steps, err := Steps(capi)
	require.NoError(t, err)
	names := stepNames(steps)
	assert.NotContains(t, names, stepJoiner)
	for _, want := range []string{stepContainerd, stepCNI, stepKubelet, stepCloudbaseInit, node.StepSelfCheck, stepSysprep} {
		assert.Contains(t, names, want)
	}
	assert.Less(t, slices.Index(names, stepKubelet), slices.Index(names, stepCloudbaseInit))
	assert.Less(t, slices.Index(names, stepCloudbaseInit), slices.Index(names, node.StepSelfCheck))
	assert.Less(t, slices.Index(names, stepCloudbaseInit), slices.Index(names, stepSysprep))

	cbi := stepScript(t, capi, stepCloudbaseInit)
	for _, want := range []string{
		`'/qn', '/norestart', '/l*v', '"` + cloudbaseInitInstallLog + `"', 'RUN_SERVICE_AS_LOCAL_SYSTEM=1'`,
		`'"C:\Windows\Temp\kubenode\CloudbaseInitSetup_1_1_8_x64.msi"'`,
		`Set-KubenodeFile -Path '` + cloudbaseInitConf + `'`,
		`Set-KubenodeFile -Path '` + cloudbaseInitUnatt + `'`,
		`'config', 'cloudbase-init', 'start=', 'demand'`,
		`New-KubenodeDirectory -Path 'C:\run\cluster-api'`,
	} {
		assert.Contains(t, cbi, want)
	}

	kubelet := stepScript(t, capi, stepKubelet)
	assert.Contains(t, kubelet, `Set-KubenodeFile -Path 'C:\k\StartKubelet.ps1'`)
	assert.Contains(t, kubelet, `$binPath = 'C:\k\kube-log-runner.exe --log-file=C:/var/log/kubelet/kubelet.log --log-file-size=100Mi --log-file-age=168h0m0s `+powerShellExe+` -NoProfile -NonInteractive -ExecutionPolicy Bypass -File C:\k\StartKubelet.ps1'`)
	assert.Contains(t, kubelet, "'start=', 'auto'", "installed, started by the service manager only at boot")
	assert.NotContains(t, kubelet, "Start-Service -Name 'kubelet'", "the kubelet is not started in the image")

	check := stepScript(t, capi, node.StepSelfCheck)
	for _, want := range []string{
		"Test-KubenodeService -Name 'cloudbase-init' -StartType 'Manual' -Running $false",
		"if (Get-Service -Name 'kubenode-joiner' -ErrorAction SilentlyContinue) {",
		`$kubelet.PathName -like '*C:\k\StartKubelet.ps1*'`,
		`Test-Path -LiteralPath 'C:\run\cluster-api' -PathType Container`,
		"metadata_services=" + CloudbaseInitConfigDrive + "," + CloudbaseInitNoCloud,
	} {
		assert.Contains(t, check, want)
	}
	assert.NotContains(t, check, "Test-KubenodeService -Name 'kubenode-joiner'")

	// The joiner image is as it was: no cloudbase-init, the kubelet service runs kubelet.exe.
	steps, err = Steps(basePlan(t))
	require.NoError(t, err)
	assert.NotContains(t, stepNames(steps), stepCloudbaseInit)
	assert.NotContains(t, stepScript(t, basePlan(t), stepKubelet), "StartKubelet.ps1")
	assert.NotContains(t, stepScript(t, basePlan(t), node.StepSelfCheck), "cloudbase-init")
}

// The two configuration files: ConfigDrive then NoCloud by default (or the
// services asked for), the user-data plugin in the service's, and the
// specialize run neither restarting Windows nor stopping the service.
func TestCloudbaseInitConfigs(t *testing.T) {
	p := clusterAPIPlan(t)
	service, unattend := p.cloudbaseInitConfigs()
	svc, una := service.render("1.1.8"), unattend.render("1.1.8")
	for _, conf := range []string{svc, una} {
		assert.Contains(t, conf, "\r\nmetadata_services="+CloudbaseInitConfigDrive+","+CloudbaseInitNoCloud+"\r\n")
		assert.True(t, strings.HasPrefix(strings.SplitN(conf, "\r\n", 3)[1], "[DEFAULT]"))
	}
	assert.Contains(t, svc, "plugins=")
	assert.Contains(t, svc, cloudbaseInitUserData)
	assert.NotContains(t, svc, "allow_reboot=false", "the service may restart Windows for a new host name")
	assert.NotContains(t, una, cloudbaseInitUserData, "the user data runs once, from the service after Setup")
	assert.Contains(t, una, "\r\nallow_reboot=false\r\nstop_service_on_exit=false\r\n")

	p.CloudbaseInitMetadataServices = []string{CloudbaseInitNoCloud}
	service, _ = p.cloudbaseInitConfigs()
	assert.Contains(t, service.render("1.1.8"), "\r\nmetadata_services="+CloudbaseInitNoCloud+"\r\n")

	assert.LessOrEqual(t, len(CloudbaseInitUnattendCommand), 259, "a RunSynchronousCommand's limit")
	assert.Equal(t, `"C:\Program Files\Cloudbase Solutions\Cloudbase-Init\Python\Scripts\cloudbase-init.exe" --config-file "C:\Program Files\Cloudbase Solutions\Cloudbase-Init\conf\cloudbase-init-unattend.conf"`, CloudbaseInitUnattendCommand)
}

// The plan refuses a joiner, an unknown or repeated metadata service, and
// metadata services without Cluster API, each by its key.
func TestClusterAPIPlanValidate(t *testing.T) {
	p := clusterAPIPlan(t)
	p.InstallJoiner = true
	p.CloudbaseInitMetadataServices = []string{CloudbaseInitNoCloud, "NoCloud", CloudbaseInitNoCloud}
	err := p.Validate()
	require.Error(t, err)
	for _, want := range []string{
		`install_joiner: bootstrap = "cluster-api" images have no joiner`,
		`cloudbase_init_metadata_services[1]: "NoCloud" is not a metadata service kubenode-bake knows`,
		`cloudbase_init_metadata_services[2]: "` + CloudbaseInitNoCloud + `" is listed twice`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "cloudbase_init_metadata_services[0]")

	p = clusterAPIPlan(t)
	p.CloudbaseInit.Version = ""
	assert.ErrorContains(t, p.Validate(), "bootstrap: no cloudbase-init release in the Windows plan")

	j := basePlan(t)
	j.CloudbaseInitMetadataServices = []string{CloudbaseInitNoCloud}
	assert.ErrorContains(t, j.Validate(), `cloudbase_init_metadata_services: only used with bootstrap = "cluster-api"`)
}

// The clone's SetupComplete.cmd starts cloudbase-init after kubenode's
// first-boot script and after the SetupComplete.cmd that was there before
// (which keeps being called), and before it deletes itself.
func TestClusterAPISetupCompleteStartsCloudbaseInit(t *testing.T) {
	cmd := setupCompleteCmd(clusterAPIPlan(t))
	lines := strings.Split(strings.TrimSuffix(cmd, "\r\n"), "\r\n")
	at := func(prefix string) int {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, prefix) })
		require.NotEqual(t, -1, i, "%q in\n%s", prefix, cmd)
		return i
	}
	first := at(`%SystemRoot%\System32\WindowsPowerShell\v1.0\powershell.exe`)
	before := at(`if exist "` + setupCompleteBefore + `" call`)
	auto := at("sc.exe config cloudbase-init start= auto")
	start := at("sc.exe start cloudbase-init")
	self := at(`del /f /q "%~f0"`)
	assert.True(t, first < before && before < auto && auto < start && start < self, "%v", []int{first, before, auto, start, self})
	assert.NotContains(t, setupCompleteCmd(basePlan(t)), "cloudbase-init", "a joiner image starts no cloudbase-init")
}

// The kubelet wrapper puts kubeadm's flags after the image's, so a flag
// both give takes kubeadm's value.
func TestKubeletWrapper(t *testing.T) {
	p := clusterAPIPlan(t)
	w := p.kubeletWrapperScript()
	assert.False(t, strings.HasPrefix(w, "\uFEFF"), "compared as text after ReadAllText, which drops a BOM")
	assert.Contains(t, w, `Get-Content -LiteralPath 'C:\var\lib\kubelet\kubeadm-flags.env'`)
	assert.Contains(t, w, "KUBELET_KUBEADM_ARGS=")
	assert.Contains(t, w, "& 'C:\\k\\kubelet.exe' @imageArgs @kubeadmArgs\r\n")
	argv := p.kubeletArgv()
	i := units.KubeletIndex(argv)
	for _, a := range argv[i+1:] {
		assert.Contains(t, w, "'"+a+"'")
	}
	for _, a := range argv[:i] {
		assert.NotContains(t, w, "'"+a+"'", "kube-log-runner's options are the service's, not the kubelet's")
	}
	assert.Equal(t, slices.Concat(argv[:i], []string{powerShellExe, "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-File", kubeletWrapper}), p.kubeletServiceArgv())
	assert.Equal(t, argv, basePlan(t).kubeletServiceArgv(), "a joiner image's service runs the kubelet itself")
}

// On the Windows guest double, a Cluster API image's flow runs the
// cloudbase-init step after the kubelet's and before the self-check,
// cleanup and sysprep, and no joiner step; the first-boot files (the
// SetupComplete.cmd that starts cloudbase-init) are uploaded before
// sysprep runs.
func TestRunWindowsClusterAPIOrder(t *testing.T) {
	fastRestart(t)
	g := guesttest.NewWindows()
	g.NeedsRestart = true
	p := clusterAPIPlan(t)
	require.NoError(t, runErr(g, guesttest.NewUI(), p, realUploads(t, p)))
	assert.Equal(t, []string{"mkdir", "verify-artifacts", "automatic-updates", "containers-feature", "restart",
		"registry", "time-sync", "containerd", "cni", "kubelet", "crictl", "defender", "cloudbase-init", "permissions", "self-check", "cleanup", "mkdir", "sysprep"}, g.Steps())
	require.NotNil(t, g.AtSysprep)
	assert.Equal(t, setupCompleteCmd(p), string(g.AtSysprep.Files[remote.UploadPath(setupComplete)]))
}

// Cluster API clones get their time from cloudbase-init's NTP client
// plugin (ntp_use_dhcp_config does nothing without it), which first sets
// the RTC's time base to real_time_clock_utc and restarts Windows when it
// differs: every configuration that runs the plugin says true, as the
// image's RealTimeIsUniversal does, and leaves Windows Time as the
// time-sync step set it (no triggers). Servers named by ntp_servers are not
// replaced by DHCP's.
func TestClusterAPITimeSource(t *testing.T) {
	for _, servers := range [][]string{nil, {"time.example.com"}} {
		p := clusterAPIPlan(t)
		p.NTPServers = servers
		service, unattend := p.cloudbaseInitConfigs()
		assert.Less(t, slices.Index(service.Plugins, cloudbaseInitNTPClient), slices.Index(service.Plugins, cloudbaseInitUserData))
		assert.GreaterOrEqual(t, slices.Index(service.Plugins, cloudbaseInitNTPClient), 0)
		for _, c := range []cloudbaseInitConfig{service, unattend} {
			text := c.render(p.CloudbaseInit.Version)
			if slices.Contains(c.Plugins, cloudbaseInitNTPClient) {
				assert.Contains(t, text, "\r\nreal_time_clock_utc=true\r\n", "the plugin would set local time and restart")
				assert.Contains(t, text, "\r\nntp_enable_service=false\r\n", "the plugin would give Windows Time its start triggers back")
			}
			assert.Contains(t, text, fmt.Sprintf("\r\nntp_use_dhcp_config=%t\r\n", servers == nil))
		}
	}
}
