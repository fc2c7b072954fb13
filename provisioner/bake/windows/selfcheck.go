package windows

import (
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// psSelfCheck are the Windows self-check's helpers: Add-KubenodeProblem
// counts and prints a problem; Invoke-KubenodeCheck runs a native command
// and returns its exit code and output (-1 when it cannot run at all).
const psSelfCheck = `$script:problems = 0
function Add-KubenodeProblem {
    param([string]$Text)
    Write-Host "problem: $Text"
    $script:problems++
}
function Invoke-KubenodeCheck {
    param([string]$FilePath, [string[]]$Arguments)
    $ErrorActionPreference = 'Continue'
    try {
        $out = & $FilePath @Arguments 2>&1
        return @{ Code = $LASTEXITCODE; Text = (($out | ForEach-Object { "$_" }) -join ' ').Trim() }
    } catch {
        return @{ Code = -1; Text = $_.Exception.Message }
    }
}
function Test-KubenodeVersion {
    param([string]$Name, [string]$Want, [string]$FilePath, [string[]]$Arguments)
    $r = Invoke-KubenodeCheck -FilePath $FilePath -Arguments $Arguments
    $first = @($r.Text -split ' ')
    $got = $first[-1]
    if ($r.Code -eq 0 -and $got -ceq $Want) {
        Write-Host "ok: $Name $Want"
    } else {
        Add-KubenodeProblem "$Name reports '$($r.Text)' (exit $($r.Code)), want $Want"
    }
}
function Test-KubenodeService {
    param([string]$Name, [string]$StartType, [bool]$Running)
    $service = Get-Service -Name $Name -ErrorAction SilentlyContinue
    if (-not $service) {
        Add-KubenodeProblem "service $Name is not installed"
        return
    }
    if ("$($service.StartType)" -eq $StartType) {
        Write-Host "ok: service $Name starts $StartType"
    } else {
        Add-KubenodeProblem "service $Name starts $($service.StartType), want $StartType"
    }
    if ($Running -and $service.Status -ne 'Running') {
        Add-KubenodeProblem "service $Name is $($service.Status), want Running"
    }
}`

// SelfCheck renders the Windows self-check.
func SelfCheck(c node.SelfCheck) []byte { return selfCheck(c, nil) }

// selfCheckScript is the plan's self-check, with the Cluster API checks
// in a Cluster API image.
func (p Plan) selfCheckScript() []byte {
	if p.ClusterAPI {
		return selfCheck(p.selfCheck(), windowsClusterAPISelfCheck(p))
	}
	return selfCheck(p.selfCheck(), nil)
}

// selfCheck renders the checks of c, then extra's, if any.
func selfCheck(c node.SelfCheck, extra func(*powershell.Script)) []byte {
	k := units.WindowsKubeDir
	s := newWinScript("self-check of the baked guest: every check runs, each problem printed as \"problem: ...\"; the script fails when there is one", psSelfCheck)
	s.Comment("Services. The joiner's is installed disabled: the first-boot answer file enables it.")
	s.Line("Test-KubenodeService -Name %s -StartType 'Automatic' -Running $true", powershell.Quote(units.ContainerdServiceName))
	s.Line("Test-KubenodeService -Name %s -StartType 'Automatic' -Running $false", powershell.Quote(units.KubeletServiceName))
	if c.Joiner {
		s.Line("Test-KubenodeService -Name %s -StartType 'Disabled' -Running $false", powershell.Quote(units.JoinerServiceName))
	}
	s.Comment("Time sync: Windows Time starts at boot, without waiting for a domain join.")
	s.Line("Test-KubenodeService -Name %s -StartType 'Automatic' -Running $false", powershell.Quote(windowsTimeService))
	s.Line("if (Test-Path -LiteralPath %s) {", powershell.Quote(`HKLM:\SYSTEM\CurrentControlSet\Services\`+windowsTimeService+`\TriggerInfo`))
	s.Line("    Add-KubenodeProblem %s", powershell.Quote("service "+windowsTimeService+" still has start triggers: on a computer in no domain it stops right after startup"))
	s.Line("}")
	s.Comment("The Containers feature.")
	s.Line("$feature = Get-WindowsFeature -Name 'Containers' -ErrorAction SilentlyContinue")
	s.Line("if ($feature -and $feature.Installed) {")
	say(s, "    ", "ok: the Containers feature is installed")
	s.Line("} else {")
	s.Line("    Add-KubenodeProblem 'the Containers feature is not installed'")
	s.Line("}")
	s.Comment("Versions.")
	want := c.KubernetesVersion
	s.Line("Test-KubenodeVersion -Name 'kubelet' -Want %s -FilePath %s -Arguments @('--version')", powershell.Quote(want), powershell.Quote(k+`\kubelet.exe`))
	s.Line("Test-KubenodeVersion -Name 'kubeadm' -Want %s -FilePath %s -Arguments @('version', '-o', 'short')", powershell.Quote(want), powershell.Quote(k+`\kubeadm.exe`))
	s.Comment("`kubectl version --client`: \"Client Version: vX.Y.Z\" first, then Kustomize's.")
	s.Line("$r = Invoke-KubenodeCheck -FilePath %s -Arguments @('version', '--client')", powershell.Quote(k+`\kubectl.exe`))
	s.Line("if ($r.Code -eq 0 -and $r.Text -clike %s) {", powershell.Quote("Client Version: "+want+" *"))
	say(s, "    ", "ok: kubectl "+want)
	s.Line("} else {")
	s.Line("    Add-KubenodeProblem (%s + $r.Text + %s)", powershell.Quote("kubectl reports '"), powershell.Quote("', want "+want))
	s.Line("}")
	ctrDir := windowsContainerdDir
	if c.ContainerdVersion != "" {
		s.Line("$r = Invoke-KubenodeCheck -FilePath %s -Arguments @('--version')", powershell.Quote(ctrDir+`\containerd.exe`))
		s.Line("if ($r.Code -eq 0 -and $r.Text -like %s) {", powershell.Quote("* v"+c.ContainerdVersion+" *"))
		say(s, "    ", "ok: containerd v"+c.ContainerdVersion)
		s.Line("} else {")
		s.Line("    Add-KubenodeProblem (%s + $r.Text + %s)", powershell.Quote("containerd reports '"), powershell.Quote("', want v"+c.ContainerdVersion))
		s.Line("}")
	}
	s.Comment("containerd answers on its pipe.")
	if c.CrictlVersion != "" {
		s.Line("Test-KubenodeVersion -Name 'crictl' -Want %s -FilePath %s -Arguments @('--version')", powershell.Quote(c.CrictlVersion), powershell.Quote(ctrDir+`\crictl.exe`))
		s.Line("$r = Invoke-KubenodeCheck -FilePath %s -Arguments @('info')", powershell.Quote(ctrDir+`\crictl.exe`))
		s.Line("if ($r.Code -eq 0) {")
		say(s, "    ", `ok: containerd answers crictl info (crictl.yaml: npipe:////./pipe/containerd-containerd)`)
		s.Line("} else {")
		s.Line("    Add-KubenodeProblem ('containerd does not answer crictl info: ' + $r.Text)")
		s.Line("}")
	} else {
		s.Line("$r = Invoke-KubenodeCheck -FilePath %s -Arguments @('version')", powershell.Quote(ctrDir+`\ctr.exe`))
		s.Line("if ($r.Code -eq 0) {")
		say(s, "    ", "ok: containerd answers ctr version (crictl not installed: install_crictl = false)")
		s.Line("} else {")
		s.Line("    Add-KubenodeProblem ('containerd does not answer ctr version: ' + $r.Text)")
		s.Line("}")
	}
	if len(c.Images) > 0 {
		s.Comment("Preloaded images, as containerd names them.")
		s.Line("$r = Invoke-KubenodeCheck -FilePath %s -Arguments @('-n', 'k8s.io', 'images', 'ls', '-q')", powershell.Quote(ctrDir+`\ctr.exe`))
		s.Line("if ($r.Code -ne 0) {")
		s.Line("    Add-KubenodeProblem ('ctr -n k8s.io images ls failed: ' + $r.Text)")
		s.Line("} else {")
		s.Line("    $have = @($r.Text -split ' ')")
		s.Line("    foreach ($image in %s) {", psList(node.NormalizedImages(c.Images)))
		s.Line("        if ($have -ccontains $image) {")
		s.Line(`            Write-Host "ok: image $image"`)
		s.Line("        } else {")
		s.Line(`            Add-KubenodeProblem "image $image is not in containerd (ctr -n k8s.io images ls)"`)
		s.Line("        }")
		s.Line("    }")
		s.Line("}")
	}
	if extra != nil {
		extra(s)
	}
	s.Line("if ($script:problems -gt 0) {")
	s.Line(`    Write-Host "self-check: $($script:problems) problems"`)
	s.Line("    exit 1")
	s.Line("}")
	say(s, "", "ok: self-check passed")
	return s.Bytes()
}
