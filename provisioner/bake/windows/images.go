package windows

import (
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// windowsImagesStep is the images step, when there is something to preload.
func windowsImagesStep(p Plan) (node.Step, bool) {
	if p.Images.Empty() {
		return node.Step{}, false
	}
	return node.Step{Name: node.StepImages, Script: windowsImages(p)}, true
}

// psImageHelpers find an image in `ctr images ls` (its line, or $null) and
// test it for labels.
const psImageHelpers = `function Get-KubenodeImage {
    param([string]$Ref)
    $ErrorActionPreference = 'Continue'
    $out = & $ctr -n k8s.io images ls 2>&1
    if ($LASTEXITCODE -ne 0) {
        throw ('ctr images ls failed with exit code {0}: {1}' -f $LASTEXITCODE, ($out -join ' '))
    }
    foreach ($line in $out) {
        $fields = ([string]$line).Trim() -split '\s+'
        if ($fields[0] -ceq $Ref) {
            return [string]$line
        }
    }
    return $null
}
function Test-KubenodeImage {
    param([string]$Ref, [string[]]$Labels)
    $line = Get-KubenodeImage -Ref $Ref
    if (-not $line) {
        return $false
    }
    foreach ($label in $Labels) {
        if (-not $line.Contains($label)) {
            return $false
        }
    }
    return $true
}`

// windowsImages is linuxImages for Windows: ctr.exe imports the archives
// and pulls pull_images (through the registry mirrors' hosts directory),
// every image is labelled pinned, and each is listed with its digest.
func windowsImages(p Plan) []byte {
	s := newWinScript("container images preloaded into containerd's "+node.ContainerdK8sNS+" namespace", psNative, psImageHelpers)
	for _, kv := range proxyEnv(p.Proxy) {
		k, v, _ := strings.Cut(kv, "=")
		s.Line("$env:%s = %s", k, powershell.Quote(v))
	}
	s.Line("$ctr = %s", powershell.Quote(windowsContainerdDir+`\ctr.exe`))
	ns := []any{"-n", node.ContainerdK8sNS}
	for _, a := range p.Images.Archives {
		label := node.ArchiveLabelKey + "=" + a.SHA256
		var checks []string
		for _, r := range a.Refs {
			checks = append(checks, "(Test-KubenodeImage -Ref "+powershell.Quote(r)+" -Labels "+psList([]string{label, node.PinnedLabel})+")")
		}
		refs := strings.Join(a.Refs, ", ")
		s.Line("if (%s) {", strings.Join(checks, " -and "))
		say(s, "    ", "ok: "+a.FileName+" imported ("+refs+")")
		s.Line("} else {")
		native(s, "    ", "ctr images import "+a.FileName, psExpr("$ctr"), append(ns, "images", "import", p.Staging+`\`+a.FileName)...)
		for _, r := range a.Refs {
			native(s, "    ", "ctr images label "+r, psExpr("$ctr"), append(ns, "images", "label", r, label, node.PinnedLabel)...)
		}
		say(s, "    ", "changed: "+a.FileName+" imported ("+refs+")")
		s.Line("}")
	}
	for _, r := range p.Images.Pull {
		s.Line("if (Test-KubenodeImage -Ref %s -Labels %s) {", powershell.Quote(r), psList([]string{node.PinnedLabel}))
		say(s, "    ", "ok: "+r+" pulled")
		s.Line("} else {")
		native(s, "    ", "ctr images pull "+r, psExpr("$ctr"), append(ns, "images", "pull", "--hosts-dir", windowsCertsDir, r)...)
		native(s, "    ", "ctr images label "+r, psExpr("$ctr"), append(ns, "images", "label", r, node.PinnedLabel)...)
		say(s, "    ", "changed: "+r+" pulled")
		s.Line("}")
	}
	s.Line("$failed = @()")
	s.Line("foreach ($ref in %s) {", psList(p.Images.Refs()))
	s.Line("    $line = Get-KubenodeImage -Ref $ref")
	s.Line("    if ($line) {")
	s.Line("        Write-Host (%s + $ref + ' ' + (($line.Trim() -split '\\s+')[2]))", powershell.Quote(node.ImageListedPrefix))
	s.Line("    } else {")
	s.Line("        $failed += $ref")
	s.Line("    }")
	s.Line("}")
	s.Line("if ($failed.Count -gt 0) {")
	s.Line("    throw (%s + ($failed -join ', ') + %s)", powershell.Quote("not in containerd's "+node.ContainerdK8sNS+" namespace after the import and pulls: "),
		powershell.Quote("; an archive must hold the references it names (see ctr -n "+node.ContainerdK8sNS+" images ls)"))
	s.Line("}")
	return s.Bytes()
}
