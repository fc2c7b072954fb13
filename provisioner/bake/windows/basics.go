// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

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

// timeParameters is where the Windows Time service keeps its time
// sources: NtpServer (w32tm's manual peer list) and Type (NTP: those
// servers; NT5DS: the domain's hierarchy).
const timeParameters = `HKLM:\SYSTEM\CurrentControlSet\Services\` + timeService + `\Parameters`

// ntpPeerFlags is each server's flag in the manual peer list: 0x8, the
// client mode (Microsoft's "Windows Time service tools and settings").
const ntpPeerFlags = "0x8"

// timeSources is what the time-sync step and each clone's first boot
// print for ntp_servers: the peer list w32tm writes, nil Peers when the
// image keeps Windows' own sources.
type timeSources struct {
	Service, Parameters, Peers string
	Args                       []string
}

func (p Plan) timeSources() timeSources {
	src := timeSources{Service: timeService, Parameters: timeParameters}
	if len(p.NTPServers) == 0 {
		return src
	}
	var peers []string
	for _, s := range p.NTPServers {
		peers = append(peers, s+","+ntpPeerFlags)
	}
	src.Peers = strings.Join(peers, " ")
	src.Args = []string{"/config", "/manualpeerlist:" + src.Peers, "/syncfromflags:manual", "/update"}
	return src
}

// timeSync starts the Windows Time service at boot. On a computer in
// no domain it is a trigger-start service (started on domain join), which
// stops right after startup even when set to Automatic; Microsoft's
// workaround is to delete its triggers and set it to Automatic
// (learn.microsoft.com/troubleshoot/windows-client/active-directory/w32time-not-start-on-workgroup,
// KB 2385818, method 1). Its time sources stay Windows' own
// (time.windows.com in a workgroup, the domain hierarchy in a domain)
// unless ntp_servers names them: then w32tm sets them as its manual peer
// list, and each clone's first boot sets them again should sysprep have
// reset them.
func timeSync(p Plan) []byte {
	title := "time sync: the Windows Time service starts at boot"
	src := p.timeSources()
	if src.Peers != "" {
		title += " and syncs with " + strings.Join(p.NTPServers, ", ")
	}
	return renderStep(node.StepTimeSync, struct {
		Title, Service, Triggers string
		Sources                  timeSources
	}{
		Title: title, Service: timeService,
		Triggers: `HKLM:\SYSTEM\CurrentControlSet\Services\` + timeService + `\TriggerInfo`,
		Sources:  src,
	})
}

// CheckNTPServers reports the problems of ntp_servers, each naming its
// entry: a host name or an IP address each, once.
func CheckNTPServers(servers []string) []error {
	var errs []error
	seen := map[string]bool{}
	for i, s := range servers {
		switch {
		case net.ParseIP(s) == nil && len(validation.IsDNS1123Subdomain(strings.ToLower(s))) > 0:
			errs = append(errs, fmt.Errorf("ntp_servers[%d]: %q is neither a host name nor an IP address", i, s))
		case seen[strings.ToLower(s)]:
			errs = append(errs, fmt.Errorf("ntp_servers[%d]: %q is listed twice", i, s))
		}
		seen[strings.ToLower(s)] = true
	}
	return errs
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
