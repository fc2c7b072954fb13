// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
)

// Images for Cluster API (bootstrap = "cluster-api") on Windows: Cluster
// API's kubeadm bootstrap provider (CABPK) hands each machine cloud-init
// user data that runs `kubeadm join`; on Windows cloudbase-init reads it
// from the machine's metadata (a config drive or a NoCloud seed) and runs
// it. The image has no joiner. What cloudbase-init needs and where it
// runs (kubernetes-sigs/image-builder
// images/capi/ansible/windows/roles/cloudbase-init; cloudbase-init's own
// documentation for the configuration keys and class paths):
//   - the MSI installed silently, the service running as LocalSystem;
//   - cloudbase-init-unattend.conf, run by sysprep's specialize pass (the
//     first-boot answer file's command, CloudbaseInitUnattendCommand), and
//     cloudbase-init.conf, the service's, with the user-data plugin;
//   - the service started once Windows Setup has finished, from
//     SetupComplete.cmd, as cloudbase-init's bin\SetSetupComplete.cmd
//     arranges: started during Setup, a plugin's change can be undone by
//     Setup. Ours keeps it Manual in the image, and the first-boot
//     SetupComplete.cmd (sysprep.go) sets it automatic and starts it.
// The kubelet's service runs a wrapper (kubeletWrapper) that adds
// the KUBELET_KUBEADM_ARGS kubeadm writes at join, which a service's fixed
// command line cannot (image-builder's roles/kubernetes tasks/sc.yml says
// so, and its StartKubelet.ps1 reads the file the same way).

// Guest locations of cloudbase-init and Cluster API.
const (
	cloudbaseInitDir     = `C:\Program Files\Cloudbase Solutions\Cloudbase-Init`
	cloudbaseInitExe     = cloudbaseInitDir + `\Python\Scripts\cloudbase-init.exe`
	cloudbaseInitConf    = cloudbaseInitDir + `\conf\cloudbase-init.conf`
	cloudbaseInitUnatt   = cloudbaseInitDir + `\conf\cloudbase-init-unattend.conf`
	cloudbaseInitLogDir  = cloudbaseInitDir + `\log\`
	cloudbaseInitScripts = cloudbaseInitDir + `\LocalScripts\`
	// cloudbaseInitService is the service the MSI installs.
	cloudbaseInitService = "cloudbase-init"
	// cloudbaseInitInstallLog is msiexec's verbose log of the install.
	cloudbaseInitInstallLog = joinerDir + `\cloudbase-init-install.log`
	// ClusterAPISentinelDir is where CABPK's Windows bootstrap writes
	// bootstrap-success.complete once kubeadm join has succeeded.
	ClusterAPISentinelDir = `C:\run\cluster-api`
	// kubeletWrapper is the script the kubelet's service runs.
	kubeletWrapper = units.WindowsKubeDir + `\StartKubelet.ps1`
	// kubeadmFlags is where kubeadm join writes KUBELET_KUBEADM_ARGS.
	kubeadmFlags = `C:\var\lib\kubelet\kubeadm-flags.env`
	// powerShellExe by full path: a service's environment is not a
	// logon's.
	powerShellExe = `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`
)

// cloudbase-init's metadata services (cloudbaseinit.metadata.services.*)
// that kubenode-bake knows, by their class paths.
const (
	CloudbaseInitConfigDrive = "cloudbaseinit.metadata.services.configdrive.ConfigDriveService"
	CloudbaseInitNoCloud     = "cloudbaseinit.metadata.services.nocloudservice.NoCloudConfigDriveService"
)

// CloudbaseInitMetadataServiceNames are the metadata services
// cloudbase_init_metadata_services may list: the config-drive kinds, which
// need no network before the node has its address, and the HTTP ones of
// the clouds cloudbase-init supports.
var CloudbaseInitMetadataServiceNames = []string{
	CloudbaseInitConfigDrive,
	CloudbaseInitNoCloud,
	"cloudbaseinit.metadata.services.httpservice.HttpService",
	"cloudbaseinit.metadata.services.ec2service.EC2Service",
	"cloudbaseinit.metadata.services.maasservice.MaaSHttpService",
	"cloudbaseinit.metadata.services.azureservice.AzureService",
	"cloudbaseinit.metadata.services.ovfservice.OvfService",
	"cloudbaseinit.metadata.services.vmwareguestinfoservice.VMwareGuestInfoService",
}

// DefaultCloudbaseInitMetadataServices are tried in this order: an
// OpenStack-style config drive (Proxmox, OpenStack), then a NoCloud seed
// (label cidata: libvirt, Nutanix, plain QEMU).
var DefaultCloudbaseInitMetadataServices = []string{CloudbaseInitConfigDrive, CloudbaseInitNoCloud}

// cloudbase-init plugins (cloudbaseinit.plugins.*).
const (
	cloudbaseInitUserData      = "cloudbaseinit.plugins.common.userdata.UserDataPlugin"
	cloudbaseInitMTU           = "cloudbaseinit.plugins.common.mtu.MTUPlugin"
	cloudbaseInitSetHostName   = "cloudbaseinit.plugins.common.sethostname.SetHostNamePlugin"
	cloudbaseInitExtendVolumes = "cloudbaseinit.plugins.windows.extendvolumes.ExtendVolumesPlugin"
	cloudbaseInitNTPClient     = "cloudbaseinit.plugins.windows.ntpclient.NTPClientPlugin"
	cloudbaseInitLocalScripts  = "cloudbaseinit.plugins.common.localscripts.LocalScriptsPlugin"
)

// cloudbaseInitConfig is one of cloudbase-init's configuration files.
type cloudbaseInitConfig struct {
	// LogFile is the log's name in cloudbaseInitLogDir.
	LogFile          string
	MetadataServices []string
	Plugins          []string
	// Unattend: the run in sysprep's specialize pass, which must neither
	// restart Windows nor leave the service stopped for Setup.
	Unattend bool
	// NTPFromDHCP: the NTP client plugin takes the servers DHCP offers
	// (none named by ntp_servers).
	NTPFromDHCP bool
}

// Plugins of the specialize pass: the network's MTU and the machine's
// name, before Windows first starts its network services.
var cloudbaseInitUnattendPlugins = []string{cloudbaseInitMTU, cloudbaseInitSetHostName}

// Plugins of the service, after Setup: the time service running and
// syncing (ntp_use_dhcp_config does nothing without the NTP client
// plugin), the user data (Cluster API's kubeadm join) last but for local
// scripts, once the disk is extended. The NTP client plugin first sets the
// RTC's time base to real_time_clock_utc and restarts Windows when it
// differs (cloudbase-init plugins/common/ntpclient.py): the configuration
// says true, as the image's RealTimeIsUniversal = 1 (autounattend's
// RTCIsUniversalCommand), so it changes nothing, where its default (false)
// would set local time and restart.
var cloudbaseInitServicePlugins = []string{cloudbaseInitMTU, cloudbaseInitNTPClient, cloudbaseInitSetHostName, cloudbaseInitExtendVolumes, cloudbaseInitUserData, cloudbaseInitLocalScripts}

func (p Plan) cloudbaseInitConfigs() (service, unattend cloudbaseInitConfig) {
	services := p.CloudbaseInitMetadataServices
	if len(services) == 0 {
		services = DefaultCloudbaseInitMetadataServices
	}
	dhcp := len(p.NTPServers) == 0
	return cloudbaseInitConfig{LogFile: "cloudbase-init.log", MetadataServices: services, Plugins: cloudbaseInitServicePlugins, NTPFromDHCP: dhcp},
		cloudbaseInitConfig{LogFile: "cloudbase-init-unattend.log", MetadataServices: services, Plugins: cloudbaseInitUnattendPlugins, Unattend: true, NTPFromDHCP: dhcp}
}

// render writes the file in oslo.config's INI form, CRLF-ended.
func (c cloudbaseInitConfig) render(version string) string {
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	add("# Written by kubenode-bake for cloudbase-init %s (bootstrap = \"cluster-api\").", version)
	add("[DEFAULT]")
	add("bsdtar_path=%s", cloudbaseInitDir+`\bin\bsdtar.exe`)
	add("mtools_path=%s", cloudbaseInitDir+`\bin\`)
	add("config_drive_cdrom=true")
	add("config_drive_raw_hhd=true")
	add("config_drive_vfat=true")
	add("logdir=%s", cloudbaseInitLogDir)
	add("logfile=%s", c.LogFile)
	add("verbose=true")
	add("logging_serial_port_settings=COM1,115200,N,8")
	add("local_scripts_path=%s", cloudbaseInitScripts)
	add("mtu_use_dhcp_config=true")
	// ntp_servers named the servers (the image's time-sync step set them):
	// DHCP's do not replace them.
	add("ntp_use_dhcp_config=%t", c.NTPFromDHCP)
	add("real_time_clock_utc=true")
	// The time-sync step made Windows Time start automatically, with no
	// start triggers, and the self-check holds it so; the plugin's service
	// check (ntp_enable_service, default true) would put network-on/off
	// triggers back on every clone (cloudbase-init
	// plugins/windows/ntpclient.py, verify_time_service).
	add("ntp_enable_service=false")
	add("check_latest_version=false")
	add("metadata_services=%s", strings.Join(c.MetadataServices, ","))
	add("plugins=%s", strings.Join(c.Plugins, ","))
	if c.Unattend {
		add("allow_reboot=false")
		add("stop_service_on_exit=false")
	}
	return strings.Join(lines, "\r\n") + "\r\n"
}

// CloudbaseInitUnattendCommand is the first-boot answer file's specialize
// command in a Cluster API image: cloudbase-init with its unattend
// configuration, as SYSTEM, before the first logon.
const CloudbaseInitUnattendCommand = `"` + cloudbaseInitExe + `" --config-file "` + cloudbaseInitUnatt + `"`

// cloudbaseInit installs cloudbase-init from the MSI, writes its
// two configuration files, keeps its service Manual and stopped in the
// image, and makes the directory CABPK's bootstrap marks success in.
func cloudbaseInit(p Plan) []byte {
	ver := p.CloudbaseInit.Version
	service, unattend := p.cloudbaseInitConfigs()
	return templates.Render("cloudbase-init.ps1.tmpl", struct {
		Version, MSI, InstallLog, Exe, Service, JoinerDir, SentinelDir string
		MSIArgs                                                        []string
		RestartRequired                                                int
		Conf, ConfText, UnattendConf, UnattendConfText                 string
	}{
		Version: ver, MSI: p.Files.CloudbaseInit, InstallLog: cloudbaseInitInstallLog, Exe: cloudbaseInitExe,
		Service: cloudbaseInitService, JoinerDir: joinerDir, SentinelDir: ClusterAPISentinelDir,
		MSIArgs:         []string{"/i", `"` + p.Staging + `\` + p.Files.CloudbaseInit + `"`, "/qn", "/norestart", "/l*v", `"` + cloudbaseInitInstallLog + `"`, "RUN_SERVICE_AS_LOCAL_SYSTEM=1"},
		RestartRequired: dismRestartRequired,
		Conf:            cloudbaseInitConf, ConfText: service.render(ver),
		UnattendConf: cloudbaseInitUnatt, UnattendConfText: unattend.render(ver),
	})
}

// kubeletWrapperScript is what the kubelet's service runs in a
// Cluster API image: the kubelet with the image's flags, then the
// KUBELET_KUBEADM_ARGS of kubeadm-flags.env (later flags win, so kubeadm's
// and the KubeadmConfigTemplate's kubeletExtraArgs override the image's).
// kubeadm writes the variable as `KUBELET_KUBEADM_ARGS="--a=b --c=d"`,
// flags separated by spaces; before the join there is no file and the
// kubelet runs with the image's flags alone (and fails for want of its
// configuration, as it does until kubeadm writes it).
func (p Plan) kubeletWrapperScript() string {
	argv := p.kubeletArgv()
	i := units.KubeletIndex(argv)
	return templates.RenderString("start-kubelet.ps1.tmpl", struct {
		KubeadmFlags, Kubelet string
		ImageArgs             []string
	}{KubeadmFlags: kubeadmFlags, Kubelet: argv[i], ImageArgs: argv[i+1:]})
}

// kubeletArgv is kube-log-runner with the kubelet: the log rotated by
// kube-log-runner where the release's can, the kubelet with the image's
// priority and reserves.
func (p Plan) kubeletArgv() []string {
	return units.WithKubeletFlags(units.WindowsKubeletArgs(p.Kubernetes.KubeLogRunnerRotation), p.kubeletImageFlags()...)
}

// kubeletServiceArgv is the kubelet service's command line: kube-log-runner
// with the kubelet, or, in a Cluster API image, with the wrapper.
func (p Plan) kubeletServiceArgv() []string {
	argv := p.kubeletArgv()
	if !p.ClusterAPI {
		return argv
	}
	i := units.KubeletIndex(argv)
	return append(argv[:i:i], powerShellExe, "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-File", kubeletWrapper)
}

// clusterAPISelfCheckInput is what the self-check's Cluster API part
// (self-check-cluster-api.ps1.tmpl) prints.
type clusterAPISelfCheckInput struct {
	Service, Exe                                      string
	Configs                                           []cloudbaseInitConfigFile
	JoinerService, Joiner                             string
	Wrapper, WrapperText, KubeletService, SentinelDir string
}

// cloudbaseInitConfigFile is a configuration file as the bake writes it.
type cloudbaseInitConfigFile struct {
	Path, Text       string
	MetadataServices []string
}

// clusterAPISelfCheck are the Cluster API checks of the self-check.
func clusterAPISelfCheck(p Plan) *clusterAPISelfCheckInput {
	service, unattend := p.cloudbaseInitConfigs()
	ver := p.CloudbaseInit.Version
	return &clusterAPISelfCheckInput{
		Service: cloudbaseInitService, Exe: cloudbaseInitExe,
		Configs: []cloudbaseInitConfigFile{
			{Path: cloudbaseInitConf, Text: service.render(ver), MetadataServices: service.MetadataServices},
			{Path: cloudbaseInitUnatt, Text: unattend.render(ver), MetadataServices: unattend.MetadataServices},
		},
		JoinerService: units.JoinerServiceName, Joiner: units.WindowsJoinerPath,
		Wrapper: kubeletWrapper, WrapperText: p.kubeletWrapperScript(),
		KubeletService: units.KubeletServiceName, SentinelDir: ClusterAPISentinelDir,
	}
}

// validateClusterAPI reports the problems of a Cluster API plan, each
// naming its HCL key.
func (p Plan) validateClusterAPI() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !p.ClusterAPI {
		if len(p.CloudbaseInitMetadataServices) > 0 {
			add(`cloudbase_init_metadata_services: only used with bootstrap = "cluster-api"; remove it, or set bootstrap = "cluster-api"`)
		}
		return errs
	}
	if p.InstallJoiner {
		errs = append(errs, errors.New(`install_joiner: bootstrap = "cluster-api" images have no joiner (cloudbase-init runs Cluster API's kubeadm join); remove install_joiner`))
	}
	if p.CloudbaseInit.Version == "" || p.Files.CloudbaseInit == "" {
		add("bootstrap: no cloudbase-init release in the Windows plan")
	}
	for i, svc := range p.CloudbaseInitMetadataServices {
		switch {
		case !slices.Contains(CloudbaseInitMetadataServiceNames, svc):
			add("cloudbase_init_metadata_services[%d]: %q is not a metadata service kubenode-bake knows (known: %s)", i, svc, strings.Join(CloudbaseInitMetadataServiceNames, ", "))
		case slices.Index(p.CloudbaseInitMetadataServices, svc) != i:
			add("cloudbase_init_metadata_services[%d]: %q is listed twice", i, svc)
		}
	}
	return errs
}
