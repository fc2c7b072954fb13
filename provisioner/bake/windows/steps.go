// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// The Windows bake's PowerShell, rendered from a Plan. Every script
// checks before it acts and prints one line per thing it did ("changed:
// ...") or found done ("ok: ..."), which the Packer UI shows; running a
// script twice changes nothing the second time. The steps' scripts are
// template files in scripts/steps (templates.go); values go into them only
// through the templates' quoting functions.

// Step names of the Windows bake, in order.
const (
	stepContainersFeature = "containers-feature"
	stepRegistry          = "registry"
	stepContainerd        = "containerd"
	stepCNI               = "cni"
	stepKubelet           = "kubelet"
	stepDefender          = "defender"
	stepJoiner            = "joiner"
	stepCloudbaseInit     = "cloudbase-init"
	stepPermissions       = "permissions"
	stepCleanup           = "cleanup"
	stepSysprep           = "sysprep"
)

// Scripts the flow runs before the steps, named like them.
const (
	stepFetchArtifacts  = "fetch-artifacts"
	stepVerifyArtifacts = "verify-artifacts"
)

// Steps validates the plan and renders the Windows bake, in order.
// Unless AutomaticUpdates, automatic-updates comes first: Windows'
// automatic updates off by policy, as image-builder's systemprep role does
// before anything else. With WindowsUpdate, windows-update comes first, as in image-builder's
// Windows playbook, whose first role (systemprep) installs updates, with
// their restarts, before it adds the Containers feature: the servicing stack
// and cumulative update are current before DISM adds the Containers
// feature, and no update restart comes after containerd and the kubelet
// are installed. The flow runs it in rounds and restarts Windows after it
// and after the Containers feature when they print restartMarker.
func Steps(p Plan) ([]node.Step, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.WithDefaults()
	kubeletScript, err := kubelet(p)
	if err != nil {
		return nil, err
	}
	var steps []node.Step
	if !p.AutomaticUpdates {
		steps = append(steps, node.Step{Name: stepAutomaticUpdates, Script: automaticUpdatesOff()})
	}
	if p.WindowsUpdate {
		steps = append(steps, node.Step{Name: stepWindowsUpdate, Script: windowsUpdateScript(p.Staging, p.WindowsUpdateTimeout)})
	}
	steps = append(steps,
		node.Step{Name: stepContainersFeature, Script: containersFeature(p)},
		node.Step{Name: stepRegistry, Script: registrySettings(p)},
		node.Step{Name: node.StepTimeSync, Script: timeSync(p)},
		node.Step{Name: stepContainerd, Script: containerd(p)},
		node.Step{Name: stepCNI, Script: cni(p)},
		node.Step{Name: stepKubelet, Script: kubeletScript},
	)
	if p.InstallCrictl {
		steps = append(steps, node.Step{Name: node.StepCrictl, Script: crictl(p)})
	}
	if step, ok := imagesStep(p); ok {
		steps = append(steps, step)
	}
	if p.DefenderExclusions {
		steps = append(steps, node.Step{Name: stepDefender, Script: defender()})
	}
	if p.ClusterAPI {
		steps = append(steps, node.Step{Name: stepCloudbaseInit, Script: cloudbaseInit(p)})
	}
	if p.InstallJoiner {
		joinerScript, err := joiner(p)
		if err != nil {
			return nil, err
		}
		steps = append(steps, node.Step{Name: stepJoiner, Script: joinerScript})
	}
	steps = append(steps, node.Step{Name: stepPermissions, Script: permissions(p)}, node.Step{Name: node.StepSelfCheck, Script: p.selfCheckScript()}, node.Step{Name: stepCleanup, Script: cleanup(p)})
	if p.Generalize {
		steps = append(steps, node.Step{Name: stepSysprep, Script: generalize(p)})
	}
	return steps, nil
}

// The Hyper-V role is enabled with dism, as image-builder's systemprep role
// and sig-windows-tools' Install-Containerd.ps1 do: Install-WindowsFeature
// Hyper-V refuses a guest without nested virtualization ("A prerequisite
// check for the Hyper-V feature failed", antrea-io/antrea#1744), dism does
// not check the CPU. Its PowerShell module (the VMSwitch cmdlets some
// network plugins call) installs with Install-WindowsFeature anywhere.
const (
	// containersFeatureName is the feature every image gets.
	containersFeatureName = "Containers"
	hyperVOptionalFeature = "Microsoft-Hyper-V"
	hyperVPowerShell      = "Hyper-V-PowerShell"
	// dismRestartRequired is dism's (and msiexec's) exit code for "done,
	// restart to finish" (ERROR_SUCCESS_REBOOT_REQUIRED).
	dismRestartRequired = 3010
)

// hyperVDismArgs enables the role and the features it depends on (/all)
// without restarting: the bake restarts Windows itself.
var hyperVDismArgs = []string{"/online", "/enable-feature", "/featurename:" + hyperVOptionalFeature, "/all", "/norestart"}

// containersFeature installs the Containers feature, windows_features
// and, as hyperv says, Hyper-V; it prints restartMarker when Windows must
// restart.
func containersFeature(p Plan) []byte {
	return renderStep(stepContainersFeature, struct {
		Title, HyperV                                     string
		Features                                          []string
		WithHyperV                                        bool
		PowerShellFeature, OptionalFeature, RestartMarker string
		DismArgs                                          []string
		RestartRequired                                   int
	}{
		Title:    "Windows features for containers (" + strings.Join(append([]string{containersFeatureName}, p.WindowsFeatures...), ", ") + "; Hyper-V: " + p.HyperV + "). Windows restarts after it when a feature asks for it.",
		Features: append([]string{containersFeatureName}, p.WindowsFeatures...),
		HyperV:   p.HyperV, WithHyperV: p.HyperV != "off" && p.Windows.HyperV,
		PowerShellFeature: hyperVPowerShell, OptionalFeature: hyperVOptionalFeature, RestartMarker: restartMarker,
		DismArgs: hyperVDismArgs, RestartRequired: dismRestartRequired,
	})
}

// registrySettings sets the release's registry values and the dynamic
// TCP port range.
func registrySettings(p Plan) []byte {
	ports := versions.WindowsDynamicTCPPorts
	return renderStep(stepRegistry, struct {
		Version string
		Values  []versions.RegistryDWORD
		Ports   versions.PortRange
		Last    int
	}{p.Windows.Version, slices.Concat(versions.WindowsRegistry, p.Windows.Registry), ports, ports.Start + ports.Count - 1})
}

// restartOnFailure is the data of the restart-on-failure template: the
// service manager restarts name units.ServiceRestartDelayMS after each
// failure.
type restartOnFailure struct {
	Name, Key       string
	DelayMS, DelayS int
	Args            []string
}

func newRestartOnFailure(name string) restartOnFailure {
	return restartOnFailure{
		Name: name, Key: `HKLM:\SYSTEM\CurrentControlSet\Services\` + name,
		DelayMS: units.ServiceRestartDelayMS, DelayS: units.ServiceRestartDelayMS / 1000,
		Args: units.ServiceRestartOnFailureArgs(),
	}
}

func containerd(p Plan) []byte {
	return renderStep(stepContainerd, struct {
		Version                      string
		ConfigVersion                int
		Dir, Unpacked, Tarball, File string
		Dirs                         []string
		Config                       string
		Registry                     registryHosts
		Environment                  []string
		ServiceKey                   keyACLCall
		Restart                      restartOnFailure
	}{
		Version: p.Containerd.Version, ConfigVersion: p.Containerd.ConfigVersion,
		Dir: containerdDir, Unpacked: p.Staging + `\containerd`,
		Tarball: p.Staging + `\` + p.Files.ContainerdTarball, File: p.Files.ContainerdTarball,
		Dirs:        []string{containerdDir, containerdData + `\root`, containerdData + `\state`},
		Config:      ContainerdConfig(p.Containerd, p.PauseImage),
		Registry:    newRegistryHosts(p.RegistryHosts),
		Environment: proxyEnv(p.Proxy),
		ServiceKey:  newKeyACLCall(containerdServiceKey, aclKeyPrivate),
		Restart:     newRestartOnFailure(units.ContainerdServiceName),
	})
}

func cni(p Plan) []byte {
	return renderStep(stepCNI, struct{ Version, BinDir, ConfDir, Unpacked, Tarball, File string }{
		Version: p.CNIPlugins.Version, BinDir: cniBinDir, ConfDir: cniConfDir,
		Unpacked: p.Staging + `\cni-plugins`, Tarball: p.Staging + `\` + p.Files.CNITarball, File: p.Files.CNITarball,
	})
}

// serviceSpec is a Windows service the bake registers with sc.exe (the
// service template): registered if it is absent, reconfigured if its
// command line, start type or dependencies differ.
type serviceSpec struct {
	Name, Display string
	Argv          []string
	// Start is sc.exe's start= value: auto or disabled.
	Start  string
	Depend []string
}

// BinPath is the service's command line.
func (svc serviceSpec) BinPath() string { return units.CommandLine(svc.Argv) }

// StartMode is Win32_Service's name of Start.
func (svc serviceSpec) StartMode() string {
	return map[string]string{"auto": "Auto", "disabled": "Disabled"}[svc.Start]
}

// DependOn is sc.exe's depend= value, empty for none.
func (svc serviceSpec) DependOn() string { return strings.Join(svc.Depend, "/") }

// check refuses a command line Windows PowerShell 5.1 cannot pass to
// sc.exe: it passes an argument holding a double quote to a native
// command wrongly.
func (svc serviceSpec) check() error {
	binPath := svc.BinPath()
	if strings.Contains(binPath, `"`) || strings.HasSuffix(binPath, `\`) {
		return fmt.Errorf("service %s: its command line %s needs quoting that Windows PowerShell 5.1 cannot pass to sc.exe", svc.Name, binPath)
	}
	return nil
}

// versionCheck is the data of the kubernetes-version template.
type versionCheck struct{ Name, Path, Version string }

// The scheduled task that rotates the kubelet's log where kube-log-runner
// cannot (Kubernetes before v1.34: KubernetesMinor.KubeLogRunnerRotation),
// as Kubernetes' GCE Windows nodes do (cluster/gce/windows/common.psm1
// Schedule-LogRotation): every hour, as SYSTEM, a script in the locked
// C:\k copies a log past units.KubeletLogMaxBytes aside and truncates it
// in place, and removes what it moved aside more than
// units.KubeletLogMaxAge ago, as kube-log-runner's own rotation does.
const (
	kubeletLogTask       = "kubenode-kubelet-log-rotation"
	kubeletLogRotation   = units.WindowsKubeDir + `\kubenode-rotate-kubelet-log.ps1`
	kubeletLogTaskMinute = 60
)

// logRotationTask is the data of the kubelet step's scheduled task.
type logRotationTask struct {
	Name, Description, Log, Script, ScriptText, Execute, Arguments string
	EveryMinutes                                                   int
}

// kubeletLogTaskFor is the task of p, nil where kube-log-runner rotates
// the log itself.
func kubeletLogTaskFor(p Plan) *logRotationTask {
	if p.Kubernetes.KubeLogRunnerRotation {
		return nil
	}
	log := backslashes(units.WindowsKubeletLog)
	return &logRotationTask{
		Name: kubeletLogTask, Log: log, Script: kubeletLogRotation, ScriptText: kubeletLogRotationScript(),
		Description: fmt.Sprintf("kubenode: every %d minutes, %s past %d MiB is moved aside, and what was moved aside more than %s ago removed (%s)",
			kubeletLogTaskMinute, log, units.KubeletLogMaxBytes>>20, units.KubeletLogMaxAge, kubeletLogRotation),
		Execute: powerShellExe, Arguments: "-NoProfile -NonInteractive -ExecutionPolicy Bypass -File " + kubeletLogRotation,
		EveryMinutes: kubeletLogTaskMinute,
	}
}

// kubeletLogRotationScript is the script the task runs.
func kubeletLogRotationScript() string {
	return templates.RenderString("rotate-kubelet-log.ps1.tmpl", struct {
		Log                   string
		MaxBytes, MaxAgeHours int
	}{backslashes(units.WindowsKubeletLog), units.KubeletLogMaxBytes, int(units.KubeletLogMaxAge.Hours())})
}

func kubelet(p Plan) ([]byte, error) {
	k := units.WindowsKubeDir
	ver := p.Kubernetes.Version
	svc := serviceSpec{
		Name: units.KubeletServiceName, Display: "kubelet", Argv: p.kubeletServiceArgv(),
		Start: "auto", Depend: []string{units.ContainerdServiceName},
	}
	if err := svc.check(); err != nil {
		return nil, err
	}
	type copy struct{ From, To string }
	data := struct {
		Title, Version, Dir, Service, FirewallRule string
		Wrapper, WrapperScript                     string
		Dirs                                       []string
		Copies                                     []copy
		Kubelet, Kubeadm                           versionCheck
		ServiceDef                                 serviceSpec
		Restart                                    restartOnFailure
		LogTask                                    *logRotationTask
		LogTaskName                                string
	}{
		Title:   "kubelet, kubeadm, kubectl and kube-log-runner " + ver + " in " + k + ", the kubelet service and its firewall rule",
		Version: ver, Dir: k, Service: units.KubeletServiceName, FirewallRule: kubeletFWRule,
		Dirs:        []string{k, `C:\var\log\kubelet`, `C:\var\lib\kubelet`, `C:\etc\kubernetes`, `C:\etc\kubernetes\manifests`, `C:\etc\kubernetes\pki`},
		Kubelet:     versionCheck{"kubelet", k + `\` + p.Files.Kubelet, ver},
		Kubeadm:     versionCheck{"kubeadm", k + `\` + p.Files.Kubeadm, ver},
		ServiceDef:  svc,
		Restart:     newRestartOnFailure(units.KubeletServiceName),
		LogTask:     kubeletLogTaskFor(p),
		LogTaskName: kubeletLogTask,
	}
	if p.ClusterAPI {
		data.Title += "; the service runs " + kubeletWrapper + ", which adds kubeadm's flags"
		data.Wrapper, data.WrapperScript = kubeletWrapper, p.kubeletWrapperScript()
	}
	for _, f := range []string{p.Files.Kubelet, p.Files.Kubeadm, p.Files.Kubectl, p.Files.KubeLogRunner} {
		data.Copies = append(data.Copies, copy{p.Staging + `\` + f, k + `\` + f})
	}
	return renderStep(stepKubelet, data), nil
}

func defender() []byte {
	return renderStep(stepDefender, struct{ Processes, Paths []string }{
		// Processes we install by full path; kube-proxy (a HostProcess
		// container) and unpigz (kubernetes#100029) by image name.
		Processes: []string{
			containerdDir + `\containerd.exe`, containerdDir + `\ctr.exe`,
			units.WindowsKubeDir + `\kubelet.exe`, "kube-proxy.exe", "unpigz.exe",
		},
		Paths: []string{containerdData},
	})
}

// Recovery of the joiner's service: restart after 30 s, 30 s, then every
// minute; the failure count resets after a day.
var joinerFailureActions = []string{"reset=", "86400", "actions=", "restart/30000/restart/30000/restart/60000"}

func joiner(p Plan) ([]byte, error) {
	conf, err := p.joinerConfig()
	if err != nil {
		return nil, err
	}
	svc := serviceSpec{Name: units.JoinerServiceName, Display: "kubenode joiner", Argv: units.JoinerServiceArgs(), Start: "disabled"}
	if err := svc.check(); err != nil {
		return nil, err
	}
	return renderStep(stepJoiner, struct {
		Source, Path, Config, ConfigContent string
		Lock                                dirACLCall
		Service                             serviceSpec
		FailureActions                      []string
	}{
		Source: p.Staging + `\` + p.Files.Joiner, Path: units.WindowsJoinerPath, Lock: newDirACLCall(joinerDirLock, p.lockedDirs()),
		Config: joinerConf, ConfigContent: string(conf),
		Service: svc, FailureActions: joinerFailureActions,
	}), nil
}

// answerFiles are where Setup and sysprep keep answer files; the
// build's holds the build account's password.
var answerFiles = []string{
	`C:\Windows\Panther\unattend.xml`,
	`C:\Windows\Panther\Autounattend.xml`,
	`C:\Windows\Panther\Unattend\unattend.xml`,
	`C:\Windows\Panther\Unattend\Autounattend.xml`,
	`C:\Windows\System32\Sysprep\unattend.xml`,
	`C:\Windows\System32\Sysprep\Autounattend.xml`,
}

func cleanup(p Plan) []byte {
	return renderStep(stepCleanup, struct {
		AnswerFiles []string
		Staging     string
	}{answerFiles, p.Staging})
}

// VerifyScript checks every upload's sha256 on the guest before
// anything is installed. It prints "ok: artifact ...", or "mismatch: ..." /
// "missing: ..." and exits 1.
func VerifyScript(uploads []Upload) []byte {
	type check struct{ Name, Path, SHA256 string }
	var checks []check
	for _, u := range uploads {
		checks = append(checks, check{u.name(), backslashes(u.Remote), strings.ToLower(u.SHA256)})
	}
	return renderStep(stepVerifyArtifacts, checks)
}

// FetchScript downloads each upload from its URL to its Remote path,
// trying each three times, directly (not through a proxy the guest may be
// set up with: the server is the build machine), and names every artifact
// it could not get; VerifyScript then checks them.
func FetchScript(uploads []Upload) []byte {
	type download struct{ Name, URL, Path, Shown string }
	var downloads []download
	for _, u := range uploads {
		downloads = append(downloads, download{u.name(), u.URL, backslashes(u.Remote), u.Shown})
	}
	return renderStep(stepFetchArtifacts, downloads)
}

// backslashes writes a guest path with backslashes.
func backslashes(p string) string { return strings.ReplaceAll(p, "/", `\`) }

// featureName is a Windows feature's name as Get-WindowsFeature lists it
// (RemoteAccess, RSAT-RemoteAccess-PowerShell, NET-Framework-45-Core).
var featureName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckWindowsFeatures reports the problems of windows_features, each
// naming its entry: a feature name each, once, neither Containers (every
// image has it) nor Hyper-V's (the hyperv key's).
func CheckWindowsFeatures(features []string) []error {
	var errs []error
	seen := map[string]bool{}
	for i, f := range features {
		switch {
		case !featureName.MatchString(f):
			errs = append(errs, fmt.Errorf("windows_features[%d]: %q is not a Windows feature name (letters, digits, '-', '_' and '.', as Get-WindowsFeature lists them)", i, f))
		case strings.EqualFold(f, containersFeatureName):
			errs = append(errs, fmt.Errorf("windows_features[%d]: %s is installed in every image; remove it", i, f))
		case strings.EqualFold(f, "Hyper-V") || strings.EqualFold(f, hyperVPowerShell):
			errs = append(errs, fmt.Errorf("windows_features[%d]: %s comes with hyperv (auto, on or off); remove it and set hyperv", i, f))
		case seen[strings.ToLower(f)]:
			errs = append(errs, fmt.Errorf("windows_features[%d]: %q is listed twice", i, f))
		}
		seen[strings.ToLower(f)] = true
	}
	return errs
}
