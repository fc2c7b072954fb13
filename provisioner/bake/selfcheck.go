package bake

import (
	"fmt"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
)

// The self-check is the bake's last look at the guest, after everything is
// installed and before generalize (Linux) or cleanup and sysprep (Windows)
// run: it checks what a node needs at its first boot, collects every
// problem, prints each as "problem: ...", and exits 1 when there is one,
// which fails the build with the list (SelfCheckError). What it checks is
// rendered from a SelfCheck; the scripts never print "changed: ", so a
// second bake still reports 0 changes.

// SelfCheck is what the self-check expects of the baked guest.
type SelfCheck struct {
	// KubernetesVersion is what kubelet, kubeadm and kubectl report.
	KubernetesVersion string
	// ContainerdVersion is what containerd reports (X.Y.Z); empty: not
	// compared (the distribution's containerd).
	ContainerdVersion string
	// CrictlVersion is the installed crictl's release: `crictl info` must
	// answer over containerd's socket. Empty: crictl is not installed and
	// `ctr version` must answer instead.
	CrictlVersion string
	// Joiner: the joiner's service is installed (Linux: enabled).
	Joiner bool
	// BridgeCNI: the bridge config's plugins (bridge, host-local, loopback)
	// are in the CNI bin directory (Linux, cni = "bridge").
	BridgeCNI bool
	// Images are image references that must be in containerd's k8s.io
	// namespace (the images preloaded into the image), as `ctr -n k8s.io
	// images ls -q` lists them; see normalizeImageRef.
	Images []string
}

// SelfCheckError is a failed self-check: every problem it found.
type SelfCheckError struct {
	Problems []string
	Err      error
}

func (e *SelfCheckError) Error() string {
	return fmt.Sprintf("self-check: the baked guest is not ready to become a node; %d problems:\n  - %s\n"+
		"fix each (the steps above show what they installed), or the configuration that asked for it, and build again",
		len(e.Problems), strings.Join(e.Problems, "\n  - "))
}

func (e *SelfCheckError) Unwrap() error { return e.Err }

// selfCheckFailure turns the self-check step's failure into a
// SelfCheckError listing its problems; any other step's error is returned
// as it is.
func selfCheckFailure(step, out string, err error) error {
	if err == nil || step != stepSelfCheck {
		return err
	}
	var problems []string
	for _, l := range linesWith(out, "problem: ") {
		problems = append(problems, strings.TrimPrefix(l, "problem: "))
	}
	if len(problems) == 0 {
		return err
	}
	return &SelfCheckError{Problems: problems, Err: err}
}

// normalizeImageRef writes a reference the way containerd names the image
// it pulled or imported: Docker Hub's domain and library/ added, and
// :latest when it has neither tag nor digest.
func normalizeImageRef(ref string) string {
	name, rest := ref, ""
	if i := strings.Index(ref, "@"); i >= 0 {
		name, rest = ref[:i], ref[i:]
	}
	domain, path, ok := strings.Cut(name, "/")
	if !ok || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, path = "docker.io", name
	}
	if domain == "docker.io" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	if rest == "" && !strings.Contains(path[strings.LastIndex(path, "/")+1:], ":") {
		path += ":latest"
	}
	return domain + "/" + path + rest
}

// LinuxSelfCheck renders the Linux self-check.
func LinuxSelfCheck(c SelfCheck) []byte {
	s := &sh{}
	s.line("#!/bin/sh")
	s.line("# kubenode-bake: self-check of the baked guest. Generated from typed configuration; do not edit.")
	s.line("# Every check runs; each problem is printed as \"problem: ...\"; the script fails when there is one.")
	s.line("set -u")
	// containerd's tarball installs to /usr/local/bin, which a sudo PATH may lack.
	s.line(`export LC_ALL=C PATH="${PATH:+$PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"`)
	s.line("problems=0")
	s.line(`problem() { echo "problem: $*"; problems=$((problems + 1)); }`)
	s.line(`enabled() { # enabled UNIT: starts at boot`)
	s.line(`  st=$(systemctl is-enabled "$1" 2>/dev/null) || true`)
	s.line(`  if [ "$st" = enabled ]; then echo "ok: $1 enabled"; else problem "$1 is not enabled to start at boot (systemctl is-enabled: ${st:-no such unit})"; fi`)
	s.line(`}`)
	s.line(`active() { # active UNIT: running now`)
	s.line(`  st=$(systemctl is-active "$1" 2>/dev/null) || true`)
	s.line(`  if [ "$st" = active ]; then echo "ok: $1 active"; else problem "$1 is not running (systemctl is-active: ${st:-unknown}; see journalctl -u $1)"; fi`)
	s.line(`}`)
	s.line(`module() { # module NAME: loaded now and listed for boot`)
	s.line(`  if [ -d "/sys/module/$1" ]; then echo "ok: module $1 loaded"; else problem "kernel module $1 is not loaded"; fi`)
	s.line(`  if cat /etc/modules-load.d/*.conf /run/modules-load.d/*.conf /usr/lib/modules-load.d/*.conf /etc/modules 2>/dev/null | grep -qx "[[:space:]]*$1[[:space:]]*"; then echo "ok: module $1 loaded at boot"; else problem "kernel module $1 is not loaded at boot (no modules-load.d file lists it)"; fi`)
	s.line(`}`)
	s.line(`sysctl_is() { # sysctl_is KEY VALUE: now and at boot`)
	s.line(`  v=$(sysctl -n "$1" 2>/dev/null) || v=`)
	s.line(`  if [ "$v" = "$2" ]; then echo "ok: $1 = $2"; else problem "sysctl $1 is ${v:-unset}, want $2"; fi`)
	s.line(`  if cat /usr/lib/sysctl.d/*.conf /run/sysctl.d/*.conf /etc/sysctl.d/*.conf /etc/sysctl.conf 2>/dev/null | awk -F= -v k="$1" -v w="$2" '{ gsub(/[[:space:]]/, "") } $1 == k { v = $2 } END { exit v != w }'; then echo "ok: $1 = $2 at boot"; else problem "sysctl $1 = $2 is not set for boot (in /etc/sysctl.d)"; fi`)
	s.line(`}`)
	s.line(`version_is() { # version_is NAME WANT COMMAND...: the last word of the command's first line`)
	s.line(`  what=$1; want=$2; shift 2`)
	s.line(`  v=$("$@" 2>/dev/null | awk 'NR == 1 { print $NF }') || v=`)
	s.line(`  if [ "$v" = "$want" ]; then echo "ok: $what $want"; else problem "$what reports ${v:-no version} ($*), want $want"; fi`)
	s.line(`}`)
	s.line("%s", shCloudInitGrowsRoot)
	s.line("")

	s.line("# Services")
	services := []string{"containerd", "kubelet"}
	if c.Joiner {
		services = append(services, units.JoinerServiceName)
	}
	for _, u := range services {
		s.line("enabled %s", q(u))
	}
	s.line("active containerd")
	s.line("# Kernel and swap (the kubelet's and kube-proxy's needs)")
	for _, m := range []string{"overlay", "br_netfilter"} {
		s.line("module %s", m)
	}
	for _, k := range []string{"net.ipv4.ip_forward", "net.bridge.bridge-nf-call-iptables"} {
		s.line("sysctl_is %s 1", k)
	}
	s.line(`if [ "$(wc -l < /proc/swaps)" -le 1 ]; then echo 'ok: swap off'; else problem "swap is on ($(tail -n +2 /proc/swaps | awk '{ print $1 }' | tr '\n' ' ')): the kubelet does not start with swap"; fi`)
	s.line(`if grep -Eq '^[^#].*[[:space:]]swap[[:space:]]' /etc/fstab; then problem 'swap is in /etc/fstab: it comes back at boot'; fi`)
	s.line("# Versions")
	want := c.KubernetesVersion
	s.line("version_is kubelet %s kubelet --version", q(want))
	s.line("version_is kubeadm %s kubeadm version -o short", q(want))
	s.line("version_is kubectl %s kubectl version --client", q(want))
	if c.ContainerdVersion != "" {
		// `containerd --version`: "containerd <module> vX.Y.Z <commit>".
		s.line("v=$(containerd --version 2>/dev/null | awk 'NR == 1 { print $3 }') || v=")
		s.line(`if [ "$v" = %s ]; then echo %s; else problem "containerd reports ${v:-no version}, want %s"; fi`,
			q("v"+c.ContainerdVersion), q("ok: containerd v"+c.ContainerdVersion), c.ContainerdVersion)
	}
	s.line("# containerd answers")
	if c.CrictlVersion != "" {
		s.line("version_is crictl %s crictl --version", q(c.CrictlVersion))
		s.line(`if out=$(crictl info 2>&1); then echo 'ok: containerd answers crictl info (/etc/crictl.yaml: unix:///run/containerd/containerd.sock)'; else problem "containerd does not answer crictl info: $(printf '%%s' "$out" | tail -n 1)"; fi`)
	} else {
		s.line(`if out=$(ctr version 2>&1); then echo 'ok: containerd answers ctr version (crictl not installed: install_crictl = false)'; else problem "containerd does not answer ctr version: $(printf '%%s' "$out" | tail -n 1)"; fi`)
	}
	if c.BridgeCNI {
		s.line("# CNI plugins of the bridge config")
		s.line("for p in bridge host-local loopback; do")
		s.line(`  if [ -x %s/"$p" ]; then echo "ok: CNI plugin $p"; else problem "CNI plugin $p is not in %s (cni = bridge needs it)"; fi`, linuxCNIBinDir, linuxCNIBinDir)
		s.line("done")
	}
	s.line("# Time sync")
	s.line("sync=''")
	s.line("for u in %s; do", linuxTimeSyncUnits)
	s.line(`  if [ -z "$sync" ] && [ "$(systemctl is-enabled "$u" 2>/dev/null)" = enabled ]; then sync=$u; fi`)
	s.line("done")
	s.line(`if [ -n "$sync" ]; then echo "ok: time sync: $sync enabled"; else problem "no time sync service is enabled (chrony, ntp or systemd-timesyncd)"; fi`)
	s.line("# The root grows to each new VM's disk")
	s.line("if ! command -v growpart >/dev/null; then")
	s.line(`  problem "growpart is not installed: the root does not grow to a new VM's disk (Debian: cloud-guest-utils, Fedora: cloud-utils-growpart)"`)
	s.line("elif command -v cloud-init >/dev/null; then")
	s.line(`  if why=$(cloudinit_grows_root); then echo "ok: cloud-init grows the root (growpart, resizefs)"; else problem "the root does not grow to a new VM's disk: $why"; fi`)
	s.line("else")
	s.line("  enabled %s", linuxGrowrootUnit)
	s.line("fi")
	if len(c.Images) > 0 {
		s.line("# Preloaded images")
		s.line("if images=$(ctr -n k8s.io images ls -q 2>&1); then")
		s.line("  for i in %s; do", shWords(normalizedImages(c.Images)))
		s.line(`    if printf '%%s\n' "$images" | grep -qxF "$i"; then echo "ok: image $i"; else problem "image $i is not in containerd (ctr -n k8s.io images ls)"; fi`)
		s.line("  done")
		s.line("else")
		s.line(`  problem "ctr -n k8s.io images ls failed: $images"`)
		s.line("fi")
	}
	s.line(`if [ "$problems" -gt 0 ]; then echo "self-check: $problems problems" >&2; exit 1; fi`)
	s.line("echo 'ok: self-check passed'")
	return s.bytes()
}

func normalizedImages(refs []string) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = normalizeImageRef(r)
	}
	return out
}

func shWords(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = q(v)
	}
	return strings.Join(quoted, " ")
}

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

// WindowsSelfCheck renders the Windows self-check.
func WindowsSelfCheck(c SelfCheck) []byte {
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
		s.Line("    foreach ($image in %s) {", psList(normalizedImages(c.Images)))
		s.Line("        if ($have -ccontains $image) {")
		s.Line(`            Write-Host "ok: image $image"`)
		s.Line("        } else {")
		s.Line(`            Add-KubenodeProblem "image $image is not in containerd (ctr -n k8s.io images ls)"`)
		s.Line("        }")
		s.Line("    }")
		s.Line("}")
	}
	s.Line("if ($script:problems -gt 0) {")
	s.Line(`    Write-Host "self-check: $($script:problems) problems"`)
	s.Line("    exit 1")
	s.Line("}")
	say(s, "", "ok: self-check passed")
	return s.Bytes()
}
