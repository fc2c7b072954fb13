package windows

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// The Windows bake's PowerShell, rendered from a Plan. Every script
// checks before it acts and prints one line per thing it did ("changed:
// ...") or found done ("ok: ..."), which the Packer UI shows; running a
// script twice changes nothing the second time. Values go into the scripts
// only through powershell.Quote and powershell.Array.

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

// Steps validates the plan and renders the Windows bake, in order.
// Unless AutomaticUpdates, automatic-updates comes first: Windows'
// automatic updates off by policy, as image-builder's systemprep role does
// before anything else. With WindowsUpdate, windows-update comes first, as in image-builder's
// Windows playbook, whose first role (systemprep) installs updates, with
// their restarts, before it adds the Containers feature: the servicing stack
// and cumulative update are current before DISM adds the Containers
// feature, and no update restart comes after containerd and the kubelet
// are installed. The flow runs it in rounds and restarts Windows after it
// and after the Containers feature when they print windowsRestartMarker.
func Steps(p Plan) ([]node.Step, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.WithDefaults()
	kubelet, err := windowsKubelet(p)
	if err != nil {
		return nil, err
	}
	var steps []node.Step
	if !p.AutomaticUpdates {
		steps = append(steps, node.Step{Name: stepAutomaticUpdates, Script: windowsAutomaticUpdatesOff()})
	}
	if p.WindowsUpdate {
		steps = append(steps, node.Step{Name: stepWindowsUpdate, Script: windowsUpdateScript(p.Staging, p.WindowsUpdateTimeout)})
	}
	steps = append(steps,
		node.Step{Name: stepContainersFeature, Script: windowsContainersFeature(p)},
		node.Step{Name: stepRegistry, Script: windowsRegistrySettings(p)},
		node.Step{Name: node.StepTimeSync, Script: windowsTimeSync()},
		node.Step{Name: stepContainerd, Script: windowsContainerd(p)},
		node.Step{Name: stepCNI, Script: windowsCNI(p)},
		node.Step{Name: stepKubelet, Script: kubelet},
	)
	if p.InstallCrictl {
		steps = append(steps, node.Step{Name: node.StepCrictl, Script: windowsCrictl(p)})
	}
	if step, ok := windowsImagesStep(p); ok {
		steps = append(steps, step)
	}
	if p.DefenderExclusions {
		steps = append(steps, node.Step{Name: stepDefender, Script: windowsDefender()})
	}
	if p.ClusterAPI {
		steps = append(steps, node.Step{Name: stepCloudbaseInit, Script: windowsCloudbaseInit(p)})
	}
	if p.InstallJoiner {
		joiner, err := windowsJoiner(p)
		if err != nil {
			return nil, err
		}
		steps = append(steps, node.Step{Name: stepJoiner, Script: joiner})
	}
	steps = append(steps, node.Step{Name: stepPermissions, Script: windowsPermissions(p)}, node.Step{Name: node.StepSelfCheck, Script: p.selfCheckScript()}, node.Step{Name: stepCleanup, Script: windowsCleanup(p)})
	if p.Generalize {
		steps = append(steps, node.Step{Name: stepSysprep, Script: windowsSysprep(p)})
	}
	return steps, nil
}

// PowerShell helpers a script defines before its body. Parameter blocks
// stay on their own lines (the tree-sitter grammar wants them there).
const (
	psSameFile = `function Test-KubenodeSameFile {
    param([string]$Source, [string]$Destination)
    if (-not (Test-Path -LiteralPath $Destination -PathType Leaf)) {
        return $false
    }
    return (Get-FileHash -LiteralPath $Source).Hash -eq (Get-FileHash -LiteralPath $Destination).Hash
}`
	psCopyFile = `function Copy-KubenodeFile {
    param([string]$Source, [string]$Destination)
    if (Test-KubenodeSameFile -Source $Source -Destination $Destination) {
        Write-Host "ok: $Destination"
        return $false
    }
    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $Destination) | Out-Null
    Copy-Item -LiteralPath $Source -Destination $Destination -Force
    Write-Host "changed: $Destination"
    return $true
}`
	psSetFile = `function Set-KubenodeFile {
    param([string]$Path, [string]$Content)
    if ((Test-Path -LiteralPath $Path -PathType Leaf) -and ([System.IO.File]::ReadAllText($Path) -ceq $Content)) {
        Write-Host "ok: $Path"
        return $false
    }
    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $Path) | Out-Null
    [System.IO.File]::WriteAllText($Path, $Content, (New-Object -TypeName System.Text.UTF8Encoding -ArgumentList $false))
    Write-Host "changed: $Path"
    return $true
}`
	psDirectory = `function New-KubenodeDirectory {
    param([string]$Path)
    if (Test-Path -LiteralPath $Path -PathType Container) {
        Write-Host "ok: $Path"
    } else {
        New-Item -ItemType Directory -Force -Path $Path | Out-Null
        Write-Host "changed: $Path created"
    }
}`
	// Native commands: stderr joins stdout for the error message, which
	// Windows PowerShell 5.1 would turn into a terminating error under
	// $ErrorActionPreference = 'Stop'.
	psNative = `function Invoke-KubenodeNative {
    param([string]$What, [string]$FilePath, [string[]]$Arguments)
    $ErrorActionPreference = 'Continue'
    $out = & $FilePath @Arguments 2>&1
    if ($LASTEXITCODE -ne 0) {
        throw ('{0} failed with exit code {1}: {2}' -f $What, $LASTEXITCODE, ($out -join ' '))
    }
}`
	// Invoke-KubenodeNativeExitCode is Invoke-KubenodeNative for commands
	// with more than one successful exit code (dism's 3010: restart
	// required); it returns the code.
	psNativeExitCode = `function Invoke-KubenodeNativeExitCode {
    param([string]$What, [string]$FilePath, [string[]]$Arguments, [int[]]$Success)
    $ErrorActionPreference = 'Continue'
    $out = & $FilePath @Arguments 2>&1
    $code = $LASTEXITCODE
    if ($Success -notcontains $code) {
        throw ('{0} failed with exit code {1}: {2}' -f $What, $code, ($out -join ' '))
    }
    return $code
}`
	// The machine PATH is read and written raw (REG_EXPAND_SZ): .NET's
	// SetEnvironmentVariable would expand %SystemRoot% and the like.
	psMachinePath = `function Add-KubenodeMachinePath {
    param([string]$Dir)
    $key = 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager\Environment'
    $raw = (Get-Item -LiteralPath $key).GetValue('Path', '', 'DoNotExpandEnvironmentNames')
    if (($raw -split ';') -contains $Dir) {
        Write-Host "ok: $Dir on the machine PATH"
    } else {
        Set-ItemProperty -LiteralPath $key -Name 'Path' -Value ($raw.TrimEnd(';') + ';' + $Dir) -Type ExpandString
        Write-Host "changed: $Dir added to the machine PATH"
    }
    if (-not (($env:Path -split ';') -contains $Dir)) {
        $env:Path = $env:Path.TrimEnd(';') + ';' + $Dir
    }
}`
	psDword = `function Set-KubenodeDword {
    param([string]$Key, [string]$Name, [int]$Value, [string]$Why)
    $path = 'HKLM:\' + $Key
    $parent = 'HKLM:'
    foreach ($part in $Key.Split('\')) {
        $parent = $parent + '\' + $part
        if (-not (Test-Path -LiteralPath $parent)) {
            New-Item -Path $parent | Out-Null
        }
    }
    $current = (Get-ItemProperty -LiteralPath $path -Name $Name -ErrorAction SilentlyContinue).$Name
    if ($null -ne $current -and [int]$current -eq $Value) {
        Write-Host "ok: $path\$Name = $Value ($Why)"
        return
    }
    New-ItemProperty -LiteralPath $path -Name $Name -PropertyType DWord -Value $Value -Force | Out-Null
    if ($null -eq $current) {
        $current = 'unset'
    }
    Write-Host "changed: $path\$Name = $Value, was $current ($Why)"
}`
)

// newWinScript starts a step's script with the helpers its body uses.
func newWinScript(title string, helpers ...string) *powershell.Script {
	s := powershell.New("kubenode-bake: " + title)
	for _, h := range helpers {
		s.Blank()
		for _, l := range strings.Split(h, "\n") {
			s.Line("%s", l)
		}
	}
	s.Blank()
	return s
}

// say prints a fixed message.
func say(s *powershell.Script, indent, msg string) {
	s.Line("%sWrite-Host %s", indent, powershell.Quote(msg))
}

// psExpr is PowerShell the generator writes itself (a variable, a
// subexpression); every other value is quoted.
type psExpr string

// psValue renders a string as a literal and a psExpr as itself.
func psValue(v any) string {
	switch v := v.(type) {
	case psExpr:
		return string(v)
	case string:
		return powershell.Quote(v)
	default:
		panic(fmt.Sprintf("psValue: %T", v))
	}
}

// native calls Invoke-KubenodeNative: what names the command in its error.
func native(s *powershell.Script, indent, what string, file any, args ...any) {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = psValue(a)
	}
	s.Line("%sInvoke-KubenodeNative -What %s -FilePath %s -Arguments @(%s)", indent, powershell.Quote(what), psValue(file), strings.Join(quoted, ", "))
}

// psList is a one-line array expression.
func psList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = powershell.Quote(v)
	}
	return "@(" + strings.Join(quoted, ", ") + ")"
}

// strs turns strings into native() arguments.
func strs(v ...string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

// The Hyper-V role is enabled with dism, as image-builder's systemprep role
// and sig-windows-tools' Install-Containerd.ps1 do: Install-WindowsFeature
// Hyper-V refuses a guest without nested virtualization ("A prerequisite
// check for the Hyper-V feature failed", antrea-io/antrea#1744), dism does
// not check the CPU. Its PowerShell module (the VMSwitch cmdlets some
// network plugins call) installs with Install-WindowsFeature anywhere.
const (
	hyperVOptionalFeature = "Microsoft-Hyper-V"
	hyperVPowerShell      = "Hyper-V-PowerShell"
	// dismRestartRequired is dism's (and msiexec's) exit code for "done,
	// restart to finish" (ERROR_SUCCESS_REBOOT_REQUIRED).
	dismRestartRequired = 3010
)

// hyperVDismArgs enables the role and the features it depends on (/all)
// without restarting: the bake restarts Windows itself.
var hyperVDismArgs = []string{"/online", "/enable-feature", "/featurename:" + hyperVOptionalFeature, "/all", "/norestart"}

func windowsContainersFeature(p Plan) []byte {
	title := "Windows features for containers (Containers; Hyper-V: " + p.HyperV + "). Windows restarts after it when a feature asks for it."
	withHyperV := p.HyperV != "off" && p.Windows.HyperV
	var s *powershell.Script
	if withHyperV {
		s = newWinScript(title, psNativeExitCode)
	} else {
		s = newWinScript(title)
	}
	s.Line("$restart = $false")
	s.Line("$features = @('Containers')")
	switch {
	case !withHyperV:
		say(s, "", "ok: Hyper-V not installed (hyperv = "+p.HyperV+")")
	case p.HyperV == "on":
		s.Comment("hyperv = on: no CPU check (dism enables the role without one).")
		s.Line("$features += %s", psList([]string{hyperVPowerShell}))
		s.Line("$hyperV = $true")
	default:
		s.Comment("hyperv = auto: Hyper-V needs the CPU's virtualization extensions and SLAT passed")
		s.Comment("through to this guest. A hypervisor that already runs hides them from")
		s.Comment("Win32_Processor, so an installed Hyper-V is kept.")
		s.Line("$hyperV = $false")
		s.Line("$cpu = Get-CimInstance -ClassName Win32_Processor | Select-Object -First 1")
		s.Line("if ($cpu.VirtualizationFirmwareEnabled -and $cpu.VMMonitorModeExtensions -and $cpu.SecondLevelAddressTranslationExtensions) {")
		say(s, "    ", "ok: the CPU offers virtualization with SLAT: Hyper-V goes in with Containers (hyperv = auto)")
		s.Line("    $features += %s", psList([]string{hyperVPowerShell}))
		s.Line("    $hyperV = $true")
		s.Line("} elseif ((Get-WindowsFeature -Name 'Hyper-V').Installed) {")
		say(s, "    ", "ok: Hyper-V installed already")
		s.Line("} else {")
		say(s, "    ", `skipped: Hyper-V: this guest sees no CPU virtualization with SLAT (hyperv = auto; hyperv = "on" forces it)`)
		s.Line("}")
	}
	s.Blank()
	s.Line("foreach ($name in $features) {")
	s.Line("    $feature = Get-WindowsFeature -Name $name")
	s.Line("    if ($feature.InstallState -eq 'InstallPending') {")
	s.Line(`        Write-Host "ok: Windows feature $name installed, waiting for a restart"`)
	s.Line("        $restart = $true")
	s.Line("    } elseif ($feature.Installed) {")
	s.Line(`        Write-Host "ok: Windows feature $name installed"`)
	s.Line("    } else {")
	s.Line("        $result = Install-WindowsFeature -Name $name")
	s.Line("        if (-not $result.Success) {")
	s.Line(`            throw "Install-WindowsFeature $name failed: $($result.ExitCode)"`)
	s.Line("        }")
	s.Line(`        Write-Host "changed: Windows feature $name installed"`)
	s.Line("        if ([string]$result.RestartNeeded -ne 'No') {")
	s.Line("            $restart = $true")
	s.Line("        }")
	s.Line("    }")
	s.Line("}")
	if withHyperV {
		windowsHyperVRole(s)
	}
	s.Line("if (Test-Path -LiteralPath 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Component Based Servicing\\RebootPending') {")
	s.Line("    $restart = $true")
	s.Line("}")
	s.Comment("The provisioner reads this line, restarts Windows and waits for it.")
	s.Line("if ($restart) {")
	say(s, "    ", windowsRestartMarker)
	s.Line("} else {")
	say(s, "    ", "ok: no restart needed")
	s.Line("}")
	return s.Bytes()
}

// windowsHyperVRole enables the Hyper-V role with dism when $hyperV is set,
// and asks for the restart its exit code 3010 calls for.
func windowsHyperVRole(s *powershell.Script) {
	s.Comment("Install-WindowsFeature Hyper-V refuses a guest without nested virtualization; dism does not check the CPU.")
	s.Line("if ($hyperV) {")
	s.Line("    $state = (Get-WindowsOptionalFeature -Online -FeatureName %s).State", powershell.Quote(hyperVOptionalFeature))
	s.Line("    if ($state -eq 'Enabled') {")
	say(s, "        ", "ok: Windows optional feature "+hyperVOptionalFeature+" enabled")
	s.Line("    } elseif ($state -eq 'EnablePending') {")
	say(s, "        ", "ok: Windows optional feature "+hyperVOptionalFeature+" enabled, waiting for a restart")
	s.Line("        $restart = $true")
	s.Line("    } else {")
	s.Line("        $code = Invoke-KubenodeNativeExitCode -What %s -FilePath 'dism.exe' -Arguments %s -Success @(0, %d)",
		powershell.Quote("dism /enable-feature "+hyperVOptionalFeature), psList(hyperVDismArgs), dismRestartRequired)
	s.Line("        if ($code -eq %d) {", dismRestartRequired)
	say(s, "            ", fmt.Sprintf("changed: Windows optional feature %s enabled (dism exit code %d: restart required)", hyperVOptionalFeature, dismRestartRequired))
	s.Line("            $restart = $true")
	s.Line("        } else {")
	say(s, "            ", "changed: Windows optional feature "+hyperVOptionalFeature+" enabled")
	s.Line("        }")
	s.Line("    }")
	s.Line("}")
}

func windowsRegistrySettings(p Plan) []byte {
	s := newWinScript("registry settings for Windows Server "+p.Windows.Version+" (image-builder's) and the dynamic TCP port range. HNS reads its values at start: they apply from the next boot.", psDword, psNative)
	for _, r := range slices.Concat(versions.WindowsRegistry, p.Windows.Registry) {
		s.Line("Set-KubenodeDword -Key %s -Name %s -Value %d -Why %s", powershell.Quote(r.Key), powershell.Quote(r.Name), r.Value, powershell.Quote(r.Why))
	}
	ports := versions.WindowsDynamicTCPPorts
	s.Blank()
	s.Line("$tcp = Get-NetTCPSetting -SettingName 'Internet'")
	s.Line("if ($tcp.DynamicPortRangeStartPort -eq %d -and $tcp.DynamicPortRangeNumberOfPorts -eq %d) {", ports.Start, ports.Count)
	say(s, "    ", fmt.Sprintf("ok: dynamic TCP ports %d-%d", ports.Start, ports.Start+ports.Count-1))
	s.Line("} else {")
	native(s, "    ", "netsh int ipv4 set dynamicport tcp", "netsh.exe", strs("int", "ipv4", "set", "dynamicport", "tcp", fmt.Sprintf("start=%d", ports.Start), fmt.Sprintf("num=%d", ports.Count))...)
	s.Line("    Write-Host (%s -f $tcp.DynamicPortRangeStartPort, $tcp.DynamicPortRangeNumberOfPorts)",
		powershell.Quote(fmt.Sprintf("changed: dynamic TCP ports %d-%d (were {0} and the {1} after it)", ports.Start, ports.Start+ports.Count-1)))
	s.Line("}")
	return s.Bytes()
}

func windowsContainerd(p Plan) []byte {
	ver := p.Containerd.Version
	s := newWinScript("containerd "+ver+" in "+windowsContainerdDir+", its config (version "+fmt.Sprint(p.Containerd.ConfigVersion)+") and its service",
		psSameFile, psCopyFile, psSetFile, psDirectory, psNative, psMachinePath)
	s.Line("$dir = %s", powershell.Quote(windowsContainerdDir))
	s.Line("$unpacked = %s", powershell.Quote(p.Staging+`\containerd`))
	for _, d := range []string{windowsContainerdDir, windowsContainerdData + `\root`, windowsContainerdData + `\state`} {
		s.Line("New-KubenodeDirectory -Path %s", powershell.Quote(d))
	}
	s.Line("if (Test-Path -LiteralPath $unpacked) {")
	s.Line("    Remove-Item -LiteralPath $unpacked -Recurse -Force")
	s.Line("}")
	s.Line("New-Item -ItemType Directory -Force -Path $unpacked | Out-Null")
	native(s, "", "tar (containerd)", "tar.exe", "-x", "-f", p.Staging+`\`+p.Files.ContainerdTarball, "-C", psExpr("$unpacked"))
	s.Line("$binaries = @(Get-ChildItem -LiteralPath (Join-Path $unpacked 'bin') -File -ErrorAction SilentlyContinue)")
	s.Line("if ($binaries.Count -eq 0) {")
	s.Line("    throw %s", powershell.Quote(p.Files.ContainerdTarball+` has no bin\ directory: is it containerd's Windows release tarball?`))
	s.Line("}")
	s.Blank()
	s.Line("$restart = $false")
	s.Line("$service = Get-Service -Name 'containerd' -ErrorAction SilentlyContinue")
	s.Comment("A running containerd.exe cannot be replaced.")
	s.Line("$stale = @($binaries | Where-Object { -not (Test-KubenodeSameFile -Source $_.FullName -Destination (Join-Path $dir $_.Name)) })")
	s.Line("if ($stale.Count -gt 0 -and $service -and $service.Status -eq 'Running') {")
	s.Line("    Stop-Service -Name 'containerd'")
	say(s, "    ", "changed: containerd stopped to replace its binaries")
	s.Line("}")
	s.Line("foreach ($binary in $binaries) {")
	s.Line("    if (Copy-KubenodeFile -Source $binary.FullName -Destination (Join-Path $dir $binary.Name)) {")
	s.Line("        $restart = $true")
	s.Line("    }")
	s.Line("}")
	s.Line("$version = (& (Join-Path $dir 'containerd.exe') --version) -join ' '")
	s.Line("if ($version -notlike ('* v' + %s + ' *')) {", powershell.Quote(ver))
	s.Line("    throw ('containerd.exe reports ' + $version + ', want ' + %s)", powershell.Quote(ver))
	s.Line("}")
	s.Line("Write-Host ('ok: ' + $version)")
	s.Blank()
	s.Line("$config = %s", powershell.Quote(ContainerdConfig(p.Containerd, p.PauseImage)))
	s.Line("if (Set-KubenodeFile -Path (Join-Path $dir 'config.toml') -Content $config) {")
	s.Line("    $restart = $true")
	s.Line("}")
	windowsRegistryHosts(s, p.RegistryHosts)
	s.Line("Add-KubenodeMachinePath -Dir $dir")
	s.Blank()
	s.Line("if (-not $service) {")
	native(s, "    ", "containerd --register-service", psExpr("(Join-Path $dir 'containerd.exe')"), "--register-service")
	say(s, "    ", "changed: containerd service registered")
	s.Line("} else {")
	say(s, "    ", "ok: containerd service registered")
	s.Line("}")
	s.Comment("The proxy reaches containerd through its service environment (REG_MULTI_SZ).")
	s.Line("$key = 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\containerd'")
	s.Line("$want = [string[]]%s", powershell.Array(proxyEnv(p.Proxy)))
	s.Line("$have = [string[]]@((Get-ItemProperty -LiteralPath $key -Name 'Environment' -ErrorAction SilentlyContinue).Environment | Where-Object { $_ })")
	s.Line("if (($have -join \"`n\") -ceq ($want -join \"`n\")) {")
	say(s, "    ", "ok: containerd service environment")
	s.Line("} elseif ($want.Count -eq 0) {")
	s.Line("    Remove-ItemProperty -LiteralPath $key -Name 'Environment'")
	say(s, "    ", "changed: proxy environment removed from the containerd service")
	s.Line("    $restart = $true")
	s.Line("} else {")
	s.Line("    New-ItemProperty -LiteralPath $key -Name 'Environment' -PropertyType MultiString -Value $want -Force | Out-Null")
	s.Line("    Write-Host ('changed: containerd service environment sets ' + (($want | ForEach-Object { $_.Split('=')[0] }) -join ', '))")
	s.Line("    $restart = $true")
	s.Line("}")
	s.Blank()
	restartOnFailure(s, units.ContainerdServiceName)
	s.Line("$service = Get-Service -Name 'containerd'")
	s.Line("if ($service.StartType -ne 'Automatic') {")
	s.Line("    Set-Service -Name 'containerd' -StartupType Automatic")
	say(s, "    ", "changed: containerd starts automatically")
	s.Line("} else {")
	say(s, "    ", "ok: containerd starts automatically")
	s.Line("}")
	s.Line("if ($service.Status -ne 'Running') {")
	s.Line("    Start-Service -Name 'containerd'")
	say(s, "    ", "changed: containerd started")
	s.Line("} elseif ($restart) {")
	s.Line("    Restart-Service -Name 'containerd'")
	say(s, "    ", "changed: containerd restarted")
	s.Line("} else {")
	say(s, "    ", "ok: containerd running")
	s.Line("}")
	s.Line("for ($i = 0; $i -lt 30 -and -not (Test-Path -LiteralPath '//./pipe/containerd-containerd'); $i++) {")
	s.Line("    Start-Sleep -Seconds 1")
	s.Line("}")
	s.Line("if (-not (Test-Path -LiteralPath '//./pipe/containerd-containerd')) {")
	s.Line("    throw 'containerd runs but its pipe \\\\.\\pipe\\containerd-containerd did not appear within 30 s: see Get-WinEvent -ProviderName containerd'")
	s.Line("}")
	say(s, "", `ok: containerd answers on \\.\pipe\containerd-containerd`)
	s.Line("Remove-Item -LiteralPath $unpacked -Recurse -Force")
	return s.Bytes()
}

func windowsCNI(p Plan) []byte {
	s := newWinScript("CNI plugins "+p.CNIPlugins.Version+" in "+windowsCNIBinDir+" and the CNI config directory",
		psSameFile, psCopyFile, psDirectory, psNative)
	for _, d := range []string{windowsCNIBinDir, windowsCNIConfDir} {
		s.Line("New-KubenodeDirectory -Path %s", powershell.Quote(d))
	}
	s.Line("$unpacked = %s", powershell.Quote(p.Staging+`\cni-plugins`))
	s.Line("if (Test-Path -LiteralPath $unpacked) {")
	s.Line("    Remove-Item -LiteralPath $unpacked -Recurse -Force")
	s.Line("}")
	s.Line("New-Item -ItemType Directory -Force -Path $unpacked | Out-Null")
	native(s, "", "tar (CNI plugins)", "tar.exe", "-x", "-f", p.Staging+`\`+p.Files.CNITarball, "-C", psExpr("$unpacked"))
	s.Line("$plugins = @(Get-ChildItem -LiteralPath $unpacked -File -Filter '*.exe')")
	s.Line("if ($plugins.Count -eq 0) {")
	s.Line("    throw %s", powershell.Quote(p.Files.CNITarball+" holds no .exe: is it the CNI plugins' Windows release tarball?"))
	s.Line("}")
	s.Line("foreach ($plugin in $plugins) {")
	s.Line("    Copy-KubenodeFile -Source $plugin.FullName -Destination (Join-Path %s $plugin.Name) | Out-Null", powershell.Quote(windowsCNIBinDir))
	s.Line("}")
	s.Line("Remove-Item -LiteralPath $unpacked -Recurse -Force")
	s.Comment("cni = none: the cluster's CNI (flannel or Calico for Windows) creates the HNS")
	s.Comment("network and writes its config on the running node (see windowsCNIBridge).")
	say(s, "", "ok: no CNI network config (cni = none: the cluster's CNI writes it on the node)")
	return s.Bytes()
}

// winService is a Windows service the bake registers with sc.exe.
type winService struct {
	Name, Display string
	Argv          []string
	// Start is sc.exe's start= value: auto or disabled.
	Start  string
	Depend []string
}

// service registers svc if it is absent and reconfigures it if its command
// line, start type or dependencies differ. Windows PowerShell 5.1 passes an
// argument holding a double quote to a native command wrongly, so a command
// line that needs one is refused here.
func service(s *powershell.Script, svc winService) error {
	binPath := units.CommandLine(svc.Argv)
	if strings.Contains(binPath, `"`) || strings.HasSuffix(binPath, `\`) {
		return fmt.Errorf("service %s: its command line %s needs quoting that Windows PowerShell 5.1 cannot pass to sc.exe", svc.Name, binPath)
	}
	startMode := map[string]string{"auto": "Auto", "disabled": "Disabled"}[svc.Start]
	depend := strings.Join(svc.Depend, "/")
	s.Line("$binPath = %s", powershell.Quote(binPath))
	s.Line("$service = Get-CimInstance -ClassName Win32_Service -Filter %s", powershell.Quote("Name='"+svc.Name+"'"))
	create := []any{"create", svc.Name, "binPath=", psExpr("$binPath"), "start=", svc.Start, "DisplayName=", svc.Display}
	config := []any{"config", svc.Name, "binPath=", psExpr("$binPath"), "start=", svc.Start, "depend=", cmp.Or(depend, "/")}
	if depend != "" {
		create = append(create, "depend=", depend)
	}
	s.Line("if (-not $service) {")
	native(s, "    ", "sc.exe create "+svc.Name, "sc.exe", create...)
	say(s, "    ", "changed: service "+svc.Name+" created (start "+svc.Start+")")
	s.Line("} elseif ($service.PathName -ne $binPath -or $service.StartMode -ne %s -or (@((Get-Service -Name %s).ServicesDependedOn | ForEach-Object { $_.Name }) -join '/') -ne %s) {",
		powershell.Quote(startMode), powershell.Quote(svc.Name), powershell.Quote(depend))
	native(s, "    ", "sc.exe config "+svc.Name, "sc.exe", config...)
	say(s, "    ", "changed: service "+svc.Name+" reconfigured (start "+svc.Start+")")
	s.Line("} else {")
	say(s, "    ", "ok: service "+svc.Name+" (start "+svc.Start+")")
	s.Line("}")
	return nil
}

func windowsKubelet(p Plan) ([]byte, error) {
	k := units.WindowsKubeDir
	ver := p.Kubernetes.Version
	title, helpers := "kubelet, kubeadm, kubectl and kube-log-runner "+ver+" in "+k+", the kubelet service and its firewall rule",
		[]string{psSameFile, psCopyFile, psDirectory, psNative, psMachinePath}
	if p.ClusterAPI {
		title += "; the service runs " + windowsKubeletWrapper + ", which adds kubeadm's flags"
		helpers = append(helpers, psSetFile)
	}
	s := newWinScript(title, helpers...)
	for _, d := range []string{k, `C:\var\log\kubelet`, `C:\var\lib\kubelet`, `C:\etc\kubernetes`, `C:\etc\kubernetes\manifests`, `C:\etc\kubernetes\pki`} {
		s.Line("New-KubenodeDirectory -Path %s", powershell.Quote(d))
	}
	var copies [][2]string
	for _, f := range []string{p.Files.Kubelet, p.Files.Kubeadm, p.Files.Kubectl, p.Files.KubeLogRunner} {
		copies = append(copies, [2]string{p.Staging + `\` + f, k + `\` + f})
	}
	s.Comment("A running kubelet.exe cannot be replaced.")
	s.Line("$stale = $false")
	for _, c := range copies {
		s.Line("if (-not (Test-KubenodeSameFile -Source %s -Destination %s)) {", powershell.Quote(c[0]), powershell.Quote(c[1]))
		s.Line("    $stale = $true")
		s.Line("}")
	}
	s.Line("$kubelet = Get-Service -Name %s -ErrorAction SilentlyContinue", powershell.Quote(units.KubeletServiceName))
	s.Line("if ($stale -and $kubelet -and $kubelet.Status -eq 'Running') {")
	s.Line("    Stop-Service -Name %s", powershell.Quote(units.KubeletServiceName))
	say(s, "    ", "changed: kubelet stopped to replace its binary")
	s.Line("}")
	for _, c := range copies {
		s.Line("Copy-KubenodeFile -Source %s -Destination %s | Out-Null", powershell.Quote(c[0]), powershell.Quote(c[1]))
	}
	s.Comment("The binaries must be the release asked for: local artifacts may be of any version,")
	s.Comment("and kubernetes_version decides the pause image and the kubelet flags.")
	s.Comment("`kubelet --version` prints \"Kubernetes vX.Y.Z\", `kubeadm version -o short` \"vX.Y.Z\".")
	for _, c := range []struct{ name, file, args string }{
		{"kubelet", p.Files.Kubelet, "--version"}, {"kubeadm", p.Files.Kubeadm, "version -o short"},
	} {
		bin := k + `\` + c.file
		s.Line("$version = (((& %s %s) -join ' ').Trim() -split ' ')[-1]", powershell.Quote(bin), c.args)
		s.Line("if (-not $version) {")
		s.Line("    $version = 'no version'")
		s.Line("}")
		s.Line("if ($version -cne %s) {", powershell.Quote(ver))
		s.Line("    throw (%s + $version + %s)", powershell.Quote("kubernetes_version is "+ver+" but the "+c.name+" at "+bin+" reports "),
			powershell.Quote(": give the "+c.name+" of "+ver+" (artifacts."+c.name+" or artifacts_dir), or set kubernetes_version to the version of the binaries you give"))
		s.Line("}")
	}
	say(s, "", "ok: kubelet and kubeadm are "+ver)
	s.Line("Add-KubenodeMachinePath -Dir %s", powershell.Quote(k))
	s.Blank()
	if p.ClusterAPI {
		s.Comment("An sc.exe service cannot read kubeadm-flags.env: the wrapper reads it at each start.")
		s.Line("Set-KubenodeFile -Path %s -Content %s | Out-Null", powershell.Quote(windowsKubeletWrapper), powershell.Quote(windowsKubeletWrapperScript()))
	} else {
		s.Comment("An sc.exe service cannot read kubeadm-flags.env: after `kubeadm join` the joiner")
		s.Comment("re-registers this service with KUBELET_KUBEADM_ARGS appended; by hand:")
		s.Comment("sc.exe config kubelet binPath= \"<this command line> <the flags>\".")
	}
	if err := service(s, winService{
		Name: units.KubeletServiceName, Display: "kubelet", Argv: p.kubeletServiceArgv(),
		Start: "auto", Depend: []string{units.ContainerdServiceName},
	}); err != nil {
		return nil, err
	}
	restartOnFailure(s, units.KubeletServiceName)
	s.Blank()
	s.Line("if (Get-NetFirewallRule -Name %s -ErrorAction SilentlyContinue) {", powershell.Quote(windowsKubeletFWRule))
	say(s, "    ", "ok: firewall allows the kubelet's TCP 10250")
	s.Line("} else {")
	s.Line("    New-NetFirewallRule -Name %s -DisplayName %s -Direction Inbound -Protocol TCP -LocalPort 10250 -Action Allow | Out-Null",
		powershell.Quote(windowsKubeletFWRule), powershell.Quote("kubelet (kubenode)"))
	say(s, "    ", "changed: firewall allows the kubelet's TCP 10250")
	s.Line("}")
	return s.Bytes(), nil
}

func windowsDefender() []byte {
	s := newWinScript("Microsoft Defender exclusions for containerd and the kubelet, where Defender runs")
	s.Comment("Add-MpPreference fails where Defender is absent or off (another antivirus).")
	s.Line("$defender = Get-Service -Name 'WinDefend' -ErrorAction SilentlyContinue")
	s.Line("if (-not (Get-Command -Name 'Add-MpPreference' -ErrorAction SilentlyContinue) -or -not $defender) {")
	say(s, "    ", "Defender not present: skipped")
	s.Line("    exit 0")
	s.Line("}")
	s.Line("if ($defender.Status -ne 'Running') {")
	say(s, "    ", "Defender not running: skipped")
	s.Line("    exit 0")
	s.Line("}")
	// Processes we install by full path; kube-proxy (a HostProcess
	// container) and unpigz (kubernetes#100029) by image name.
	processes := []string{
		windowsContainerdDir + `\containerd.exe`, windowsContainerdDir + `\ctr.exe`,
		units.WindowsKubeDir + `\kubelet.exe`, "kube-proxy.exe", "unpigz.exe",
	}
	s.Line("$processes = %s", powershell.Array(processes))
	s.Line("$paths = %s", powershell.Array([]string{windowsContainerdData}))
	s.Line("$preference = Get-MpPreference")
	s.Line("foreach ($process in $processes) {")
	s.Line("    if (@($preference.ExclusionProcess) -contains $process) {")
	s.Line(`        Write-Host "ok: Defender excludes process $process"`)
	s.Line("    } else {")
	s.Line("        Add-MpPreference -ExclusionProcess $process")
	s.Line(`        Write-Host "changed: Defender excludes process $process"`)
	s.Line("    }")
	s.Line("}")
	s.Line("foreach ($path in $paths) {")
	s.Line("    if (@($preference.ExclusionPath) -contains $path) {")
	s.Line(`        Write-Host "ok: Defender excludes path $path"`)
	s.Line("    } else {")
	s.Line("        Add-MpPreference -ExclusionPath $path")
	s.Line(`        Write-Host "changed: Defender excludes path $path"`)
	s.Line("    }")
	s.Line("}")
	s.Comment("Read them back: what Defender reports is what holds.")
	s.Line("$preference = Get-MpPreference")
	s.Line("Write-Host ('Defender process exclusions: ' + (@($preference.ExclusionProcess) -join ', '))")
	s.Line("Write-Host ('Defender path exclusions: ' + (@($preference.ExclusionPath) -join ', '))")
	s.Line("$missing = @($processes | Where-Object { @($preference.ExclusionProcess) -notcontains $_ }) + @($paths | Where-Object { @($preference.ExclusionPath) -notcontains $_ })")
	s.Line("if ($missing.Count -gt 0) {")
	s.Line("    throw ('Defender does not report these exclusions after adding them: ' + ($missing -join ', '))")
	s.Line("}")
	return s.Bytes()
}

// restartOnFailure has the service manager restart name 10 s after each
// failure (sc.exe failure name reset= 0 actions= restart/10000), as
// Kubernetes' GCE Windows nodes do for the kubelet and containerd. The
// registry's FailureActions (SERVICE_FAILURE_ACTIONS: reset period at 0,
// the action count at 12, the first action's type and delay at 20 and 24)
// tells whether it is set already. sc.exe config, which the joiner's
// re-registration of the kubelet amounts to, keeps it.
func restartOnFailure(s *powershell.Script, name string) {
	s.Line("$actions = (Get-ItemProperty -LiteralPath %s -Name 'FailureActions' -ErrorAction SilentlyContinue).FailureActions",
		powershell.Quote(`HKLM:\SYSTEM\CurrentControlSet\Services\`+name))
	s.Line("if ($actions -and $actions.Length -ge 28 -and [System.BitConverter]::ToUInt32($actions, 0) -eq 0 -and [System.BitConverter]::ToUInt32($actions, 12) -eq 1 -and [System.BitConverter]::ToUInt32($actions, 20) -eq 1 -and [System.BitConverter]::ToUInt32($actions, 24) -eq %d) {", units.ServiceRestartDelayMS)
	say(s, "    ", fmt.Sprintf("ok: service %s restarts %d s after a failure", name, units.ServiceRestartDelayMS/1000))
	s.Line("} else {")
	native(s, "    ", "sc.exe failure "+name, "sc.exe", strs(append([]string{"failure", name}, units.ServiceRestartOnFailureArgs()...)...)...)
	say(s, "    ", fmt.Sprintf("changed: service %s restarts %d s after a failure", name, units.ServiceRestartDelayMS/1000))
	s.Line("}")
}

// Recovery of the joiner's service: restart after 30 s, 30 s, then every
// minute; the failure count resets after a day.
var joinerFailureActions = []string{"reset=", "86400", "actions=", "restart/30000/restart/30000/restart/60000"}

func windowsJoiner(p Plan) ([]byte, error) {
	conf, err := p.joinerConfig()
	if err != nil {
		return nil, err
	}
	name := units.JoinerServiceName
	s := newWinScript("the joiner, its baked configuration and its first-boot service (installed disabled: the template or a post-sysprep answer file enables it)",
		psSameFile, psCopyFile, psSetFile, psDirectory, psNative)
	s.Line("Copy-KubenodeFile -Source %s -Destination %s | Out-Null", powershell.Quote(p.Staging+`\`+p.Files.Joiner), powershell.Quote(units.WindowsJoinerPath))
	s.Line("New-KubenodeDirectory -Path %s", powershell.Quote(windowsJoinerDir))
	s.Comment("The joiner keeps the join token here while it joins: SYSTEM and Administrators only.")
	s.Line("if ((Get-Acl -LiteralPath %s).AreAccessRulesProtected) {", powershell.Quote(windowsJoinerDir))
	say(s, "    ", "ok: "+windowsJoinerDir+" is private to SYSTEM and Administrators")
	s.Line("} else {")
	native(s, "    ", "icacls "+windowsJoinerDir, "icacls.exe", strs(windowsJoinerDir, "/inheritance:r", "/grant", "*S-1-5-18:(OI)(CI)F", "/grant", "*S-1-5-32-544:(OI)(CI)F")...)
	say(s, "    ", "changed: "+windowsJoinerDir+" made private to SYSTEM and Administrators")
	s.Line("}")
	s.Line("Set-KubenodeFile -Path %s -Content %s | Out-Null", powershell.Quote(windowsJoinerConf), powershell.Quote(string(conf)))
	s.Blank()
	if err := service(s, winService{Name: name, Display: "kubenode joiner", Argv: units.JoinerServiceArgs(), Start: "disabled"}); err != nil {
		return nil, err
	}
	s.Comment("A failed join exits with an error: the service manager restarts it, also for a")
	s.Comment("non-crash failure (failureflag 1).")
	s.Line("$key = %s", powershell.Quote(`HKLM:\SYSTEM\CurrentControlSet\Services\`+name))
	s.Line("$flag = (Get-ItemProperty -LiteralPath $key -Name 'FailureActionsOnNonCrashFailures' -ErrorAction SilentlyContinue).FailureActionsOnNonCrashFailures")
	s.Line("$actions = (Get-ItemProperty -LiteralPath $key -Name 'FailureActions' -ErrorAction SilentlyContinue).FailureActions")
	s.Line("if ($flag -eq 1 -and $actions) {")
	say(s, "    ", "ok: service "+name+" restarts after a failure")
	s.Line("} else {")
	native(s, "    ", "sc.exe failure "+name, "sc.exe", strs(append([]string{"failure", name}, joinerFailureActions...)...)...)
	native(s, "    ", "sc.exe failureflag "+name, "sc.exe", "failureflag", name, "1")
	say(s, "    ", "changed: service "+name+" restarts after a failure")
	s.Line("}")
	return s.Bytes(), nil
}

// windowsAnswerFiles are where Setup and sysprep keep answer files; the
// build's holds the build account's password.
var windowsAnswerFiles = []string{
	`C:\Windows\Panther\unattend.xml`,
	`C:\Windows\Panther\Autounattend.xml`,
	`C:\Windows\Panther\Unattend\unattend.xml`,
	`C:\Windows\Panther\Unattend\Autounattend.xml`,
	`C:\Windows\System32\Sysprep\unattend.xml`,
	`C:\Windows\System32\Sysprep\Autounattend.xml`,
}

func windowsCleanup(p Plan) []byte {
	s := newWinScript("ready for sysprep: no answer file left behind, autologon off, the staging directory removed")
	s.Line("foreach ($file in %s) {", powershell.Array(windowsAnswerFiles))
	s.Line("    if (Test-Path -LiteralPath $file) {")
	s.Line("        Remove-Item -LiteralPath $file -Force")
	s.Line(`        Write-Host "changed: removed $file"`)
	s.Line("    } else {")
	s.Line(`        Write-Host "ok: no $file"`)
	s.Line("    }")
	s.Line("}")
	s.Line("$winlogon = 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon'")
	s.Line("$autologon = (Get-ItemProperty -LiteralPath $winlogon -Name 'AutoAdminLogon' -ErrorAction SilentlyContinue).AutoAdminLogon")
	s.Line("if ($autologon -eq '0') {")
	say(s, "    ", "ok: autologon off")
	s.Line("} else {")
	s.Line("    Set-ItemProperty -LiteralPath $winlogon -Name 'AutoAdminLogon' -Value '0'")
	say(s, "    ", "changed: autologon off")
	s.Line("}")
	s.Line("foreach ($name in @('DefaultPassword', 'AutoLogonCount')) {")
	s.Line("    if ($null -ne (Get-ItemProperty -LiteralPath $winlogon -Name $name -ErrorAction SilentlyContinue)) {")
	s.Line("        Remove-ItemProperty -LiteralPath $winlogon -Name $name")
	s.Line(`        Write-Host "changed: Winlogon $name removed"`)
	s.Line("    } else {")
	s.Line(`        Write-Host "ok: no Winlogon $name"`)
	s.Line("    }")
	s.Line("}")
	s.Comment("This script runs from the staging directory; PowerShell has read it whole.")
	s.Line("Remove-Item -LiteralPath %s -Recurse -Force -ErrorAction SilentlyContinue", powershell.Quote(p.Staging))
	s.Line("if (Test-Path -LiteralPath %s) {", powershell.Quote(p.Staging))
	s.Line("    throw %s", powershell.Quote("could not remove "+p.Staging+": a file in it is in use; remove it before sysprep"))
	s.Line("}")
	say(s, "", "changed: removed "+p.Staging)
	return s.Bytes()
}

// VerifyScript checks every upload's sha256 on the guest before
// anything is installed. It prints "ok: artifact ...", or "mismatch: ..." /
// "missing: ..." and exits 1.
func VerifyScript(uploads []Upload) []byte {
	s := newWinScript("the uploaded artifacts are what was checked on the build machine (sha256)")
	s.Line("function Test-KubenodeArtifact {")
	s.Line("    param([string]$Name, [string]$Path, [string]$Want)")
	s.Line("    if (-not (Test-Path -LiteralPath $Path -PathType Leaf)) {")
	s.Line(`        Write-Host "missing: artifact ${Name}: $Path is not on the guest"`)
	s.Line("        return $false")
	s.Line("    }")
	s.Line("    $got = (Get-FileHash -LiteralPath $Path -Algorithm SHA256).Hash.ToLowerInvariant()")
	s.Line("    if ($got -ne $Want) {")
	s.Line(`        Write-Host "mismatch: artifact ${Name}: $Path has sha256 $got, want $Want"`)
	s.Line("        return $false")
	s.Line("    }")
	s.Line(`    Write-Host "ok: artifact $Name sha256 $got"`)
	s.Line("    return $true")
	s.Line("}")
	s.Blank()
	everyUpload(s, uploads, func(u Upload) string {
		return fmt.Sprintf("Test-KubenodeArtifact -Name %s -Path %s -Want %s", powershell.Quote(u.name()), powershell.Quote(windowsPath(u.Remote)), powershell.Quote(strings.ToLower(u.SHA256)))
	})
	return s.Bytes()
}

// everyUpload calls the script's function (call's command) for each
// upload, every one even after one failed, and exits 1 if any did.
func everyUpload(s *powershell.Script, uploads []Upload, call func(Upload) string) {
	s.Line("$good = $true")
	for _, u := range uploads {
		s.Line("if (-not (%s)) {", call(u))
		s.Line("    $good = $false")
		s.Line("}")
	}
	s.Line("if (-not $good) {")
	s.Line("    exit 1")
	s.Line("}")
}

// FetchScript downloads each upload from its URL to its Remote path,
// trying each three times, directly (not through a proxy the guest may be
// set up with: the server is the build machine), and names every artifact
// it could not get; VerifyScript then checks them.
func FetchScript(uploads []Upload) []byte {
	s := newWinScript("download the artifacts from the build machine")
	s.Line("function Get-KubenodeArtifact {")
	s.Line("    param([string]$Name, [string]$Url, [string]$Path, [string]$Shown)")
	s.Line("    $problem = ''")
	s.Line("    for ($try = 1; $try -le 3; $try++) {")
	s.Line("        try {")
	s.Line("            $client = New-Object System.Net.WebClient")
	s.Line("            $client.Proxy = $null")
	s.Line("            $client.DownloadFile($Url, $Path)")
	s.Line(`            Write-Host "ok: downloaded artifact $Name"`)
	s.Line("            return $true")
	s.Line("        } catch {")
	s.Line("            $problem = $_.Exception.Message")
	s.Line("            Start-Sleep -Seconds (2 * $try)")
	s.Line("        }")
	s.Line("    }")
	s.Line(`    Write-Host "download failed: artifact ${Name} from ${Shown}: $problem"`)
	s.Line("    return $false")
	s.Line("}")
	s.Blank()
	everyUpload(s, uploads, func(u Upload) string {
		return fmt.Sprintf("Get-KubenodeArtifact -Name %s -Url %s -Path %s -Shown %s", powershell.Quote(u.name()), powershell.Quote(u.URL), powershell.Quote(windowsPath(u.Remote)), powershell.Quote(u.Shown))
	})
	return s.Bytes()
}

// windowsPath writes a guest path with backslashes.
func windowsPath(p string) string { return strings.ReplaceAll(p, "/", `\`) }
