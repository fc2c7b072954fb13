// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package windows turns the description of a node into the steps of a
// Windows guest, PowerShell scripts (Steps, in order), and runs them over
// WinRM or SSH (Bake): with the restarts the Containers feature and Windows
// Update ask for, and sysprep and the closer that power the guest off.
package windows

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	joinerconfig "github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Plan is everything the Windows scripts are rendered from. Rows come
// from the version table; the rest from the configuration.
type Plan struct {
	Windows    versions.WindowsRelease
	Kubernetes versions.KubernetesRelease
	Containerd versions.ContainerdRelease
	CNIPlugins versions.CNIPluginsRelease
	// PauseImage is the sandbox image; empty: WindowsPauseImage(Kubernetes, Windows).
	PauseImage string
	// Proxy is put in containerd's service environment.
	Proxy node.Proxy
	// CNI is `none`; `bridge` is refused on Windows (see NoCNIBridge).
	CNI string
	// DefenderExclusions adds the Defender exclusions where Defender exists.
	DefenderExclusions bool
	// HyperV is auto, on or off.
	HyperV string
	// NTPServers are the Windows Time service's time sources (empty:
	// Windows' own).
	NTPServers []string
	// WindowsFeatures are installed with the Containers feature, in the
	// same step and restart.
	WindowsFeatures []string
	// InstallJoiner installs the joiner and its first-boot service, with
	// NodeLabels and KubeletExtraArgs (flag name without dashes -> value)
	// in its baked configuration.
	InstallJoiner    bool
	NodeLabels       map[string]string
	KubeletExtraArgs map[string]string
	// KubeletPriorityClass (default DefaultKubeletPriorityClass),
	// KubeletSystemReserved (nil: DefaultKubeletSystemReserved) and
	// KubeletKubeReserved are the kubelet's priority and reserves
	// (kubelet.go), in the image's kubelet flags and the joiner's.
	KubeletPriorityClass  string
	KubeletSystemReserved map[string]string
	KubeletKubeReserved   map[string]string
	// ClusterAPI readies the image for Cluster API's kubeadm bootstrap
	// (bootstrap = "cluster-api", clusterapi.go): cloudbase-init installed
	// and configured with CloudbaseInitMetadataServices (default
	// DefaultCloudbaseInitMetadataServices), the kubelet's service run by
	// a wrapper that adds kubeadm's flags, no joiner (InstallJoiner false).
	ClusterAPI                    bool
	CloudbaseInit                 versions.CloudbaseInitRelease
	CloudbaseInitMetadataServices []string
	// Staging is the guest directory the artifacts were uploaded to.
	// Default: defaultStaging.
	Staging string
	// Files are the artifacts' file names in Staging. Default: the names
	// of the rows' Windows artifacts.
	Files Files
	// RestartTimeout bounds the wait for Windows to come back after the
	// Containers feature's restart. Default 15m.
	RestartTimeout time.Duration
	// WindowsUpdate runs the windows-update step first, in rounds, within
	// WindowsUpdateTimeout for the whole phase (default 2h).
	WindowsUpdate        bool
	WindowsUpdateTimeout time.Duration
	// AutomaticUpdates keeps Windows' automatic updates as they are; when
	// false, the automatic-updates step turns them off by policy first.
	AutomaticUpdates bool
	// Generalize ends the bake with the sysprep step: the build's doors
	// closed, FirstBoot written for sysprep, sysprep run; Windows powers
	// off. FirstBoot is autounattend.RenderWindowsFirstBoot's answer file.
	Generalize bool
	FirstBoot  []byte
	// RandomClonePassword (clone_admin_password empty): each clone's first
	// boot gives the built-in Administrator a random password made on the
	// clone and stored nowhere; FirstBoot's password only takes Setup past
	// the welcome screens.
	RandomClonePassword bool

	// Node basics and the self-check (basics.go, selfcheck.go):
	// InstallCrictl installs Crictl's crictl.exe beside containerd;
	// CheckImages are image references the self-check expects in
	// containerd's k8s.io namespace (the images preloaded into the image).
	InstallCrictl bool
	Crictl        versions.CrictlRelease
	CheckImages   []string
	// Images are preloaded into containerd (Kubeadm is Linux-only);
	// RegistryHosts written to its hosts directory.
	Images        node.Images
	RegistryHosts []node.RegistryHost
}

// Files are file names in the staging directory.
type Files struct {
	Kubelet, Kubeadm, Kubectl, KubeLogRunner string
	ContainerdTarball, CNITarball            string
	Joiner                                   string
	Crictl                                   string
	CloudbaseInit                            string
}

// Guest locations on Windows. The kubelet's and the joiner's come from
// internal/joinerapi/units, which the joiner uses at run time too.
const (
	defaultStaging = `C:\Windows\Temp\kubenode`
	containerdDir  = `C:\Program Files\containerd`
	containerdData = `C:\ProgramData\containerd`
	cniBinDir      = `C:\opt\cni\bin`
	cniConfDir     = `C:\etc\cni\net.d`
	joinerDir      = `C:\ProgramData\kubenode`
	// joinerConf is internal/joinerapi/config's DefaultPaths().Config on
	// Windows (that file builds only for GOOS=windows).
	joinerConf     = joinerDir + `\` + joinerconfig.FileName
	kubeletFWRule  = "kubenode-kubelet"
	JoinerFileName = "kubenode-joiner.exe"
	// restartMarker is the line the containers-feature and
	// windows-update steps print when Windows must restart to finish.
	restartMarker = "kubenode-bake: restart required"
)

// NoCNIBridge explains why `cni = "bridge"` is refused on Windows: the
// Windows plugins that give pods a node-local network (win-bridge from
// containernetworking/plugins, sdnbridge from microsoft/windows-container-
// networking) attach endpoints to an HNS L2Bridge network that must exist
// first and is bound to the node's own network adapter and addresses. An
// image cannot carry that network (every clone has another adapter and
// address), and the Windows `nat` plugin is not in the CNI plugins release.
// On Windows the cluster's CNI (flannel or Calico as HostProcess
// DaemonSets) creates the HNS network and writes the config on the node.
const NoCNIBridge = `cni: "bridge" is not available on Windows: Windows pod networks are HNS networks bound to the node's own adapter, ` +
	`which the cluster's CNI (flannel or Calico for Windows) creates on the running node; use cni = "none" for Windows builds`

// NoContainerdPackage: Windows has no distribution package of
// containerd; the bake installs the release tarball.
const NoContainerdPackage = `containerd_source: "package" is Linux-only; Windows installs containerd's release tarball (containerd_source = "tarball")`

// WithDefaults fills what the caller left out.
func (p Plan) WithDefaults() Plan {
	if p.PauseImage == "" {
		p.PauseImage = versions.WindowsPauseImage(p.Kubernetes, p.Windows)
	}
	if p.CNI == "" {
		p.CNI = "none"
	}
	if p.HyperV == "" {
		p.HyperV = "auto"
	}
	if p.KubeletPriorityClass == "" {
		p.KubeletPriorityClass = DefaultKubeletPriorityClass
	}
	if p.KubeletSystemReserved == nil {
		p.KubeletSystemReserved = maps.Clone(DefaultKubeletSystemReserved)
	}
	if p.Staging == "" {
		p.Staging = defaultStaging
	}
	if p.RestartTimeout == 0 {
		p.RestartTimeout = 15 * time.Minute
	}
	if p.WindowsUpdateTimeout == 0 {
		p.WindowsUpdateTimeout = 2 * time.Hour
	}
	f := &p.Files
	k8s := p.Kubernetes.WindowsArtifacts()
	for i, name := range []*string{&f.Kubelet, &f.Kubeadm, &f.Kubectl, &f.KubeLogRunner} {
		if *name == "" {
			*name = k8s[i].FileName
		}
	}
	if f.ContainerdTarball == "" {
		f.ContainerdTarball = p.Containerd.WindowsArtifact().FileName
	}
	if f.CNITarball == "" {
		f.CNITarball = p.CNIPlugins.WindowsArtifact().FileName
	}
	if f.Joiner == "" {
		f.Joiner = JoinerFileName
	}
	if f.CloudbaseInit == "" && p.CloudbaseInit.Version != "" {
		f.CloudbaseInit = p.CloudbaseInit.WindowsArtifact().FileName
	}
	return p
}

var absPath = regexp.MustCompile(`^[A-Za-z]:\\[^"'\x60$]*$`)

// Validate reports every problem at once, each naming its HCL key.
func (p Plan) Validate() error {
	p = p.WithDefaults()
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for key, missing := range map[string]bool{
		"windows_version":     p.Windows.Version == "",
		"kubernetes_version":  p.Kubernetes.Version == "",
		"containerd_version":  p.Containerd.Version == "",
		"cni_plugins_version": p.CNIPlugins.Version == "",
	} {
		if missing {
			add("%s: no release from the version table in the Windows plan", key)
		}
	}
	if p.Containerd.ConfigVersion != 2 && p.Containerd.ConfigVersion != 3 {
		add("containerd_version: %q has config version %d in the version table; kubenode-bake writes versions 2 and 3", p.Containerd.Version, p.Containerd.ConfigVersion)
	}
	switch p.HyperV {
	case "auto", "off":
	case "on":
		if !p.Windows.HyperV {
			add("hyperv: Windows Server %s cannot install Hyper-V beside Containers; use auto or off", p.Windows.Version)
		}
	default:
		add("hyperv: %q is not auto, on or off", p.HyperV)
	}
	switch p.CNI {
	case "none":
	case "bridge":
		errs = append(errs, errors.New(NoCNIBridge))
	default:
		add("cni: %q is not none or bridge", p.CNI)
	}
	if why := node.OneLine(p.PauseImage); why != "" || p.PauseImage == "" {
		add("pause_image: %q %s", p.PauseImage, cmp.Or(why, "is empty"))
	} else if err := versions.CheckWindowsPause(p.PauseImage, p.Windows); err != nil {
		errs = append(errs, err)
	}
	for key, v := range map[string]string{"http_proxy": p.Proxy.HTTP, "https_proxy": p.Proxy.HTTPS, "no_proxy": p.Proxy.No} {
		if why := node.OneLine(v); why != "" {
			add("%s: %s", key, why)
		}
	}
	if !absPath.MatchString(p.Staging) {
		add("staging directory %q: want an absolute Windows path (C:\\...) without quotes, backticks or $", p.Staging)
	}
	for name, file := range map[string]string{
		versions.ArtifactKubelet: p.Files.Kubelet, versions.ArtifactKubeadm: p.Files.Kubeadm, versions.ArtifactKubectl: p.Files.Kubectl,
		versions.ArtifactKubeLogRunner: p.Files.KubeLogRunner, versions.ArtifactContainerd: p.Files.ContainerdTarball,
		versions.ArtifactCNIPlugins: p.Files.CNITarball, versions.ArtifactJoiner: p.Files.Joiner, versions.ArtifactCrictl: p.Files.Crictl,
		versions.ArtifactCloudbaseInit: p.Files.CloudbaseInit,
	} {
		if strings.ContainsAny(file, `\/:*?"<>|`) || node.OneLine(file) != "" {
			add("artifact %s: %q is not a plain file name", name, file)
		}
	}
	if p.RestartTimeout < 0 {
		add("restart_timeout: %s is negative", p.RestartTimeout)
	}
	if p.WindowsUpdateTimeout < 0 {
		add("windows_update_timeout: %s is negative", p.WindowsUpdateTimeout)
	}
	if p.Generalize && len(p.FirstBoot) == 0 {
		add("generalize: no first-boot answer file for sysprep in the Windows plan")
	}
	if p.InstallJoiner {
		if _, err := p.joinerConfig(); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, CheckNTPServers(p.NTPServers)...)
	errs = append(errs, CheckWindowsFeatures(p.WindowsFeatures)...)
	errs = append(errs, CheckKubeletResources(p.KubeletPriorityClass, p.KubeletSystemReserved, p.KubeletKubeReserved, p.KubeletExtraArgs)...)
	errs = append(errs, p.validateClusterAPI()...)
	errs = append(errs, p.validateBasics()...)
	return joinSorted(errs)
}

// joinSorted joins errs sorted by message: some come from map iteration.
func joinSorted(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	slices.Sort(msgs)
	out := make([]error, len(msgs))
	for i, m := range msgs {
		out[i] = errors.New(m)
	}
	return errors.Join(out...)
}

// joinerConfig is the joiner's configuration baked into a Windows image:
// how the node registers. The join seed disc adds the credentials at first
// boot. Where the kubelet still takes --pod-infra-container-image, the
// node's pause image goes to kubeadm as a kubelet extra arg, so the flag
// kubeadm writes names the image containerd runs (not kubeadm's default,
// which may have no image for this Windows build).
func (p Plan) joinerConfig() ([]byte, error) {
	jc := joinerconfig.New()
	jc.CRISocket = units.WindowsCRIEndpoint
	jc.KubeadmPath = units.WindowsKubeDir + `\kubeadm.exe`
	jc.KubeletPath = units.WindowsKubeDir + `\kubelet.exe`
	jc.Labels = p.NodeLabels
	// The image's priority and reserves: the joiner's re-registration of
	// the kubelet service after kubeadm join keeps the flags it is given.
	args := p.kubeletImageArgs()
	maps.Copy(args, p.KubeletExtraArgs)
	if _, set := args[versions.PodInfraContainerImage]; !set && p.Kubernetes.PodInfraContainerImageFlag {
		args[versions.PodInfraContainerImage] = p.PauseImage
	}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		jc.KubeletExtraArgs = append(jc.KubeletExtraArgs, kubeadmv1.Arg{Name: name, Value: args[name]})
	}
	data, err := jc.Marshal()
	if err != nil {
		return nil, fmt.Errorf("node_labels / kubelet_extra_args / kubelet_priority_class / kubelet_system_reserved / kubelet_kube_reserved: rendering the joiner's configuration: %w", err)
	}
	// The joiner checks its configuration when the node boots; check it
	// now, when the fix is one edit away.
	check := joinerconfig.New()
	if err := check.Merge("the baked joiner configuration", data); err != nil {
		return nil, fmt.Errorf("node_labels / kubelet_extra_args: %w", err)
	}
	check.SetDefaults("kubenode-bake", "")
	if err := check.ValidateNode(); err != nil {
		return nil, fmt.Errorf("node_labels / kubelet_extra_args: the joiner would refuse its configuration: %w", err)
	}
	return data, nil
}

// ContainerdConfig renders containerd's config.toml for Windows:
// config version 2 (containerd 1.x) or 3 (2.x), the sandbox (pause) image,
// the CNI directories, root and state under ProgramData, and the named pipe
// the kubelet and the joiner dial. Paths are TOML literal strings, so
// backslashes need no escaping.
func ContainerdConfig(ctr versions.ContainerdRelease, pause string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by kubenode-bake for containerd %s on Windows.\n", ctr.Version)
	fmt.Fprintf(&b, "version = %d\n", ctr.ConfigVersion)
	b.WriteString(node.ContainerdImports(tomlLiteral(containerdConfD + `\*.toml`)))
	fmt.Fprintf(&b, "root = %s\n", tomlLiteral(containerdData+`\root`))
	fmt.Fprintf(&b, "state = %s\n\n", tomlLiteral(containerdData+`\state`))
	fmt.Fprintf(&b, "[grpc]\n  address = %s\n\n", tomlLiteral(`\\.\pipe\containerd-containerd`))
	cniBin := tomlLiteral(tomlPath(cniBinDir))
	cniConf := tomlLiteral(tomlPath(cniConfDir))
	binDir := "bin_dir = " + cniBin
	if ctr.CNIBinDirs {
		binDir = "bin_dirs = [" + cniBin + "]"
	}
	switch ctr.ConfigVersion {
	case 3:
		fmt.Fprintf(&b, "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = %s\n\n", node.TOMLBasic(pause))
		fmt.Fprintf(&b, "[plugins.'io.containerd.cri.v1.runtime'.cni]\n  %s\n  conf_dir = %s\n", binDir, cniConf)
		b.WriteString(node.CRIRegistryConfig(3, tomlLiteral(certsDir)))
	default:
		fmt.Fprintf(&b, "[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = %s\n\n", node.TOMLBasic(pause))
		fmt.Fprintf(&b, "[plugins.\"io.containerd.grpc.v1.cri\".cni]\n  %s\n  conf_dir = %s\n", binDir, cniConf)
		b.WriteString(node.CRIRegistryConfig(2, tomlLiteral(certsDir)))
	}
	return b.String()
}

// tomlPath writes C:\opt\cni\bin as c:/opt/cni/bin, the form
// containerd's Windows documentation and image-builder use.
func tomlPath(p string) string {
	return strings.ToLower(p[:1]) + strings.ReplaceAll(p[1:], `\`, "/")
}

// tomlLiteral quotes a value without ' or newlines (our fixed paths).
func tomlLiteral(s string) string { return "'" + s + "'" }

// proxyEnv is containerd's service environment: Windows environment
// variables are case-insensitive, so one spelling each.
func proxyEnv(p node.Proxy) []string {
	var out []string
	for _, kv := range [][2]string{{"HTTP_PROXY", p.HTTP}, {"HTTPS_PROXY", p.HTTPS}, {"NO_PROXY", p.No}} {
		if kv[1] != "" {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	return out
}
