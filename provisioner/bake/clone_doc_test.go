// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/linux"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/windows"
)

// cloneChecks hold, for each row of docs/security.md's "What a clone
// holds" table (named by the row's <!-- check: NAME --> comment), what the
// generated Linux and Windows scripts must contain for the row to be true.
var cloneChecks = map[string]struct{ linux, windows []string }{
	"build-account": {
		linux:   []string{"systemctl enable -q kubenode-lock-build-account.service", `usermod -L "$user"`, `rm -f "$home/.ssh/authorized_keys" "$home/.ssh/authorized_keys2"`},
		windows: []string{"Disable-LocalUser -SID $account", "-Name 'BuildAccountSid' -PropertyType String -Value $build", "Disable-LocalUser -SID $sid", "Set-LocalUser -SID $admin.SID -Password $password", "Disable-LocalUser -SID $builtin.SID", "$_.Name -eq 'administrators_authorized_keys'"},
	},
	"admin-rights": {
		linux:   []string{`rm -f "/etc/sudoers.d/90-kubenode-$user"`, `sed -i "/^$user[[:space:]]/d" /etc/sudoers.d/90-cloud-init-users`, `gpasswd -d "$user" "$g"`},
		windows: []string{"Set-ItemProperty -LiteralPath $system -Name 'EnableLUA' -Value 1", "Remove-ItemProperty -LiteralPath $system -Name 'LocalAccountTokenFilterPolicy'"},
	},
	"autologon": {
		windows: []string{"Set-ItemProperty -LiteralPath $winlogon -Name 'AutoAdminLogon' -Value '0'", "foreach ($name in @('DefaultPassword', 'AutoLogonCount'))", "[Kubenode.LsaSecret]::Delete('DefaultPassword')"},
	},
	"remote-login": {
		linux:   []string{"rm -f /etc/ssh/ssh_host_*key*", "ExecStart=/usr/bin/ssh-keygen -A", "s/^[[:space:]]*PasswordAuthentication[[:space:]]+yes[[:space:]]*$/PasswordAuthentication no/"},
		windows: []string{"foreach ($name in @('WinRM', 'sshd'))", "Set-Service -Name $name -StartupType Disabled", `Remove-Item -Path 'WSMan:\localhost\Listener\*'`, `Set-Item -Path 'WSMan:\localhost\Service\Auth\Basic' -Value $false`, `Set-Item -Path 'WSMan:\localhost\Service\AllowUnencrypted' -Value $false`, "Remove-NetFirewallRule -Name $rule", "'kubenode-winrm-http'", "'kubenode-winrm-https'", "'kubenode-sshd'", `'SOFTWARE\Policies\Microsoft\Windows\WinRM\Service'`, "@('AllowBasic', 'AllowUnencryptedTraffic')", `Start-Transcript -Path 'C:\ProgramData\kubenode\first-boot.log'`, "$_.Name -like 'ssh_host_*'"},
	},
	"ports": {
		linux:   []string{"ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS"},
		windows: []string{"-Name 'kubenode-kubelet'", "-Protocol TCP -LocalPort 10250 -Action Allow"},
	},
	"services": {
		linux:   []string{"systemctl enable -q containerd", "systemctl enable -q kubelet", "systemctl enable -q kubenode-joiner", "ConditionPathExists=!/etc/kubernetes/kubelet.conf", "systemctl disable -q kubenode-lock-build-account.service"},
		windows: []string{"-StartupType Automatic"},
	},
	"proxy": {
		linux:   []string{"put '/etc/systemd/system/containerd.service.d/http-proxy.conf' 0600 ", "rm -f /etc/apt/apt.conf.d/90curtin-aptproxy", "rm -f /etc/apt/apt.conf.d/90cloud-init-aptproxy", "/Id' /etc/apt/apt.conf"},
		windows: []string{"New-ItemProperty -LiteralPath $key -Name 'Environment' -PropertyType MultiString", `Set-KubenodeMachineKeyAcl -Key 'SYSTEM\CurrentControlSet\Services\containerd' -Sddl 'D:PAI(A;CI;0xf003f;;;S-1-5-18)(A;CI;0xf003f;;;S-1-5-32-544)'`},
	},
	"joiner-config": {
		linux:   []string{"put '/etc/kubenode/joiner.yaml' 0600 "},
		windows: []string{`C:\ProgramData\kubenode`},
	},
	"seed-copies": {
		linux:   []string{"cloud-init clean --logs", "find /var/log -type f -exec truncate -s 0 {} +"},
		windows: []string{`C:\Windows\Panther\unattend.xml`, `C:\Windows\Panther\Unattend\Autounattend.xml`, `del /f /q "%~f0"`, `C:\Windows\Setup\Scripts\SetupComplete.cmd`, `del /f /q "C:\Windows\System32\Sysprep\kubenode-firstboot.xml"`, "'cl', 'Microsoft-Windows-PowerShell/Operational'", "(Join-Path $env:TEMP 'winrmcp-*.tmp')", `Remove-ItemProperty -LiteralPath 'HKLM:\SOFTWARE\kubenode' -Name 'BuildAccountSid'`},
	},
	"staging": {
		linux:   []string{"rm -rf '/var/tmp/kubenode-bake'"},
		windows: []string{`C:\Windows\Temp\kubenode`},
	},
	"join-seed": {
		linux:   []string{"put '/etc/kubenode/joiner.yaml' 0600 "},
		windows: []string{`C:\ProgramData\kubenode\joiner.yaml`},
	},
	"kubeconfigs": {
		linux:   []string{"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"},
		windows: []string{`C:\var\lib\kubelet`, `C:\etc\kubernetes`},
	},
}

// The table in docs/security.md that says what a clone holds: every row
// names a check, every check is a row, and every check's snippets are in
// the generated scripts. A row without a check, a check nobody documents
// and a closing step that left the scripts all fail.
func TestCloneTableMatchesTheScripts(t *testing.T) {
	doc, err := os.ReadFile("../../docs/security.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n### What a clone holds (with `generalize`)\n")
	require.True(t, ok, "docs/security.md has the section")
	section, _, _ = strings.Cut(section, "\n#")
	marker := regexp.MustCompile(`<!-- check: ([a-z-]+) -->`)
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| ---") || strings.HasPrefix(line, "| | ") {
			continue
		}
		m := marker.FindAllStringSubmatch(line, -1)
		if !assert.Len(t, m, 1, "a row of the table names one check: %s", line) {
			continue
		}
		rows = append(rows, m[0][1])
	}
	require.NotEmpty(t, rows, "the table was found")
	documented := slices.Sorted(slices.Values(rows))
	checks := slices.Sorted(func(yield func(string) bool) {
		for k := range cloneChecks {
			if !yield(k) {
				return
			}
		}
	})
	assert.Equal(t, checks, slices.Compact(documented), "every check is one row of the table, every row a check")
	assert.Len(t, rows, len(slices.Compact(documented)), "no check names two rows")

	linux, windows := renderedForCloneChecks(t)
	for _, name := range checks {
		c := cloneChecks[name]
		assert.NotEmpty(t, append(c.linux, c.windows...), "check %s holds a snippet", name)
		for _, snippet := range c.linux {
			assert.True(t, strings.Contains(linux, snippet), "check %s: the Linux scripts lost %q", name, snippet)
		}
		for _, snippet := range c.windows {
			assert.True(t, strings.Contains(windows, snippet), "check %s: the Windows scripts lost %q", name, snippet)
		}
	}
}

// renderedForCloneChecks is every script a generalized Linux and Windows
// bake writes, the scripts those leave for a clone's first boot included,
// from a configuration with a proxy.
func renderedForCloneChecks(t *testing.T) (linuxScripts, windowsScripts string) {
	var p Provisioner
	require.NoError(t, p.Prepare(map[string]any{"http_proxy": "http://proxy.example:3128", "download_cache_dir": t.TempDir()}))
	lp, _, err := p.config.linuxPlan()
	require.NoError(t, err)
	lp.LockAccount = "kubenode"
	var l strings.Builder
	for _, s := range linux.Steps(lp) {
		l.Write(s.Script)
	}
	win, err := versions.LookupWindows("")
	require.NoError(t, err)
	wp, _, err := p.config.windowsPlan(win)
	require.NoError(t, err)
	steps, err := windows.Steps(wp)
	require.NoError(t, err)
	var w strings.Builder
	for _, s := range steps {
		w.Write(s.Script)
	}
	// The sysprep step uploads the clone's first-boot files before it runs.
	for _, f := range windows.FirstBootFiles(wp) {
		w.Write(f.Content)
	}
	// The sysprep step carries the closer as a quoted string: its text is
	// the sysprep script's with '' read as '.
	w.WriteString(strings.ReplaceAll(w.String(), "''", "'"))
	return l.String(), w.String()
}
