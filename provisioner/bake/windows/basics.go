package windows

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// crictlFile is crictl's tarball in the staging directory.
func (p Plan) crictlFile() string {
	return cmp.Or(p.Files.Crictl, p.Crictl.WindowsArtifact().FileName)
}

// validateBasics reports the basics' problems in the Windows plan.
func (p Plan) validateBasics() []error {
	if p.InstallCrictl && p.Crictl.Version == "" {
		return []error{fmt.Errorf("crictl_version: no crictl release in the Windows plan; set crictl_version, or install_crictl = false")}
	}
	return nil
}

// selfCheck is what the Windows self-check expects of the guest.
func (p Plan) selfCheck() node.SelfCheck {
	c := node.SelfCheck{
		KubernetesVersion: p.Kubernetes.Version,
		ContainerdVersion: p.Containerd.Version,
		Joiner:            p.InstallJoiner,
		Images:            append(slices.Clone(p.CheckImages), p.Images.Refs()...),
	}
	if p.InstallCrictl {
		c.CrictlVersion = p.Crictl.Version
	}
	return c
}

// timeService is the Windows Time service.
const timeService = "W32Time"

// timeSync starts the Windows Time service at boot. On a computer in
// no domain it is a trigger-start service (started on domain join), which
// stops right after startup even when set to Automatic; Microsoft's
// workaround is to delete its triggers and set it to Automatic
// (learn.microsoft.com/troubleshoot/windows-client/active-directory/w32time-not-start-on-workgroup,
// KB 2385818, method 1). Its time sources stay Windows' own
// (time.windows.com in a workgroup, the domain hierarchy in a domain).
func timeSync() []byte {
	return renderStep(node.StepTimeSync, struct{ Service, Triggers string }{
		Service:  timeService,
		Triggers: `HKLM:\SYSTEM\CurrentControlSet\Services\` + timeService + `\TriggerInfo`,
	})
}

// crictlConfig points crictl at containerd's pipe. crictl reads
// %USERPROFILE%\.crictl\crictl.yaml and, when that does not exist,
// crictl.yaml in its own directory (cri-tools cmd/crictl/main_windows.go,
// pkg/common/config.go GetServerConfigFromFile).
const crictlConfig = "runtime-endpoint: npipe:////./pipe/containerd-containerd\nimage-endpoint: npipe:////./pipe/containerd-containerd\ntimeout: 10\n"

// crictl installs crictl.exe beside containerd, with its
// crictl.yaml, and checks its version.
func crictl(p Plan) []byte {
	return renderStep(node.StepCrictl, struct{ Version, File, Tarball, Unpacked, Exe, Config, ConfigContent string }{
		Version:       p.Crictl.Version,
		File:          p.crictlFile(),
		Tarball:       p.Staging + `\` + p.crictlFile(),
		Unpacked:      p.Staging + `\crictl`,
		Exe:           containerdDir + `\crictl.exe`,
		Config:        containerdDir + `\crictl.yaml`,
		ConfigContent: crictlConfig,
	})
}
