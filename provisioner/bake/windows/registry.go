package windows

import (
	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Guest locations of containerd's registry host configuration and of the
// configuration files containerd's `imports` reads.
const (
	windowsCertsDir        = windowsContainerdDir + `\certs.d`
	windowsContainerdConfD = windowsContainerdDir + `\conf.d`
)

// windowsRegistryHosts is linuxRegistryHosts in PowerShell, for the
// containerd step; it sets $restart when something changed.
func windowsRegistryHosts(s *powershell.Script, hosts []node.RegistryHost) {
	for _, d := range []string{windowsCertsDir, windowsContainerdConfD} {
		s.Line("New-KubenodeDirectory -Path %s", powershell.Quote(d))
	}
	var keep []string
	for _, h := range hosts {
		dir := windowsCertsDir + `\` + node.HostsDir(h.Registry)
		ca := ""
		if h.CA != "" {
			ca = dir + `\` + node.CAFileName
			s.Line("if (Set-KubenodeFile -Path %s -Content %s) {", powershell.Quote(ca), powershell.Quote(h.CA))
			s.Line("    $restart = $true")
			s.Line("}")
		}
		s.Line("if (Set-KubenodeFile -Path %s -Content %s) {", powershell.Quote(dir+`\hosts.toml`), powershell.Quote(node.HostsTOML(h, ca)))
		s.Line("    $restart = $true")
		s.Line("}")
		keep = append(keep, dir+`\hosts.toml`)
	}
	s.Line("$keep = %s", powershell.Array(keep))
	s.Line("foreach ($file in @(Get-ChildItem -LiteralPath %s -Filter 'hosts.toml' -File -Recurse -Depth 1 -ErrorAction SilentlyContinue)) {", powershell.Quote(windowsCertsDir))
	s.Line("    if ($keep -contains $file.FullName) {")
	s.Line("        continue")
	s.Line("    }")
	s.Line("    if ((Get-Content -LiteralPath $file.FullName -TotalCount 1) -notlike %s) {", powershell.Quote(node.HostsHeader+"*"))
	s.Line("        continue")
	s.Line("    }")
	s.Line("    Remove-Item -LiteralPath $file.FullName -Force")
	s.Line("    Remove-Item -LiteralPath (Join-Path $file.DirectoryName %s) -Force -ErrorAction SilentlyContinue", powershell.Quote(node.CAFileName))
	s.Line("    if (-not (Get-ChildItem -LiteralPath $file.DirectoryName -Force)) {")
	s.Line("        Remove-Item -LiteralPath $file.DirectoryName -Force")
	s.Line("    }")
	s.Line(`    Write-Host "changed: $($file.FullName) removed (no longer in registry_mirrors)"`)
	s.Line("    $restart = $true")
	s.Line("}")
}
