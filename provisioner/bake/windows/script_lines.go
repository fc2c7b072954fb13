package windows

import (
	"fmt"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
)

// The line-by-line script builder of the scripts written in Go
// (automatic-updates, windows-update, cloudbase-init, permissions,
// self-check, sysprep and the clone's first boot); the other steps are
// template files in scripts/steps (templates_steps.go).

// PowerShell helpers a script defines before its body. Parameter blocks
// stay on their own lines (the tree-sitter grammar wants them there).
const (
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
