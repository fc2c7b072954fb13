package windows

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
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

// windowsTimeService is the Windows Time service.
const windowsTimeService = "W32Time"

// windowsTimeSync starts the Windows Time service at boot. On a computer in
// no domain it is a trigger-start service (started on domain join), which
// stops right after startup even when set to Automatic; Microsoft's
// workaround is to delete its triggers and set it to Automatic
// (learn.microsoft.com/troubleshoot/windows-client/active-directory/w32time-not-start-on-workgroup,
// KB 2385818, method 1). Its time sources stay Windows' own
// (time.windows.com in a workgroup, the domain hierarchy in a domain).
func windowsTimeSync() []byte {
	s := newWinScript("time sync: the Windows Time service starts at boot", psNative)
	s.Line("$triggers = %s", powershell.Quote(`HKLM:\SYSTEM\CurrentControlSet\Services\`+windowsTimeService+`\TriggerInfo`))
	s.Line("if (Test-Path -LiteralPath $triggers) {")
	native(s, "    ", "sc.exe triggerinfo "+windowsTimeService+" delete", "sc.exe", "triggerinfo", windowsTimeService, "delete")
	say(s, "    ", "changed: Windows Time no longer waits for a domain join to start (its triggers deleted)")
	s.Line("} else {")
	say(s, "    ", "ok: Windows Time has no start triggers")
	s.Line("}")
	s.Line("if ((Get-Service -Name %s).StartType -ne 'Automatic') {", powershell.Quote(windowsTimeService))
	s.Line("    Set-Service -Name %s -StartupType Automatic", powershell.Quote(windowsTimeService))
	say(s, "    ", "changed: Windows Time starts automatically")
	s.Line("} else {")
	say(s, "    ", "ok: Windows Time starts automatically")
	s.Line("}")
	s.Line("if ((Get-Service -Name %s).Status -ne 'Running') {", powershell.Quote(windowsTimeService))
	s.Line("    Start-Service -Name %s", powershell.Quote(windowsTimeService))
	say(s, "    ", "changed: Windows Time started")
	s.Line("} else {")
	say(s, "    ", "ok: Windows Time running")
	s.Line("}")
	return s.Bytes()
}

// windowsCrictlConfig points crictl at containerd's pipe. crictl reads
// %USERPROFILE%\.crictl\crictl.yaml and, when that does not exist,
// crictl.yaml in its own directory (cri-tools cmd/crictl/main_windows.go,
// pkg/common/config.go GetServerConfigFromFile).
const windowsCrictlConfig = "runtime-endpoint: npipe:////./pipe/containerd-containerd\nimage-endpoint: npipe:////./pipe/containerd-containerd\ntimeout: 10\n"

// windowsCrictl installs crictl.exe beside containerd, with its
// crictl.yaml, and checks its version.
func windowsCrictl(p Plan) []byte {
	ver := p.Crictl.Version
	exe := windowsContainerdDir + `\crictl.exe`
	s := newWinScript("crictl "+ver+" beside containerd, with crictl.yaml for containerd's pipe",
		psSameFile, psCopyFile, psSetFile, psNative)
	s.Line("$unpacked = %s", powershell.Quote(p.Staging+`\crictl`))
	s.Line("if (Test-Path -LiteralPath $unpacked) {")
	s.Line("    Remove-Item -LiteralPath $unpacked -Recurse -Force")
	s.Line("}")
	s.Line("New-Item -ItemType Directory -Force -Path $unpacked | Out-Null")
	native(s, "", "tar (crictl)", "tar.exe", "-x", "-f", p.Staging+`\`+p.crictlFile(), "-C", psExpr("$unpacked"))
	s.Line("Copy-KubenodeFile -Source (Join-Path $unpacked 'crictl.exe') -Destination %s | Out-Null", powershell.Quote(exe))
	s.Line("$version = (((& %s --version) -join ' ').Trim() -split ' ')[-1]", powershell.Quote(exe))
	s.Line("if ($version -cne %s) {", powershell.Quote(ver))
	s.Line("    throw (%s + $version + %s)", powershell.Quote("crictl_version is "+ver+" but the crictl.exe from "+p.crictlFile()+" reports "),
		powershell.Quote(": give the crictl of "+ver+" (artifacts.crictl or artifacts_dir), or set crictl_version to its version"))
	s.Line("}")
	say(s, "", "ok: crictl is "+ver)
	s.Line("Set-KubenodeFile -Path %s -Content %s | Out-Null", powershell.Quote(windowsContainerdDir+`\crictl.yaml`), powershell.Quote(windowsCrictlConfig))
	s.Line("Remove-Item -LiteralPath $unpacked -Recurse -Force")
	return s.Bytes()
}
