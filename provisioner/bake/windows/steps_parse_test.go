//go:build pwsh

package windows

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/pwsh"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// TestWindowsScriptsParse parses every generated Windows script (all golden
// cases, the artifact check and the flow's own commands) with the
// tree-sitter PowerShell grammar.
func TestWindowsScriptsParse(t *testing.T) {
	scripts := map[string][]byte{
		"boot check": []byte(windowsBootCheck),
		"OS query":   []byte(windowsOSQuery),
		// Run by the sysprep step as -EncodedCommand.
		"transport closer": []byte(windowsTransportCloser()),
	}
	for name, src := range renderedWindows(t) {
		if strings.HasSuffix(name, ".ps1") {
			scripts[name] = src
		}
	}
	require.Greater(t, len(scripts), 20)
	for name, src := range scripts {
		t.Run(name, func(t *testing.T) {
			assert.NoError(t, pwsh.Check(src))
		})
	}
}

// TestWindowsParseCheckCanFail: a script broken the way a generator bug
// would break it (an unbalanced brace, a quote a value failed to double)
// fails the check.
func TestWindowsParseCheckCanFail(t *testing.T) {
	steps, err := Steps(basePlan(t))
	require.NoError(t, err)
	i := slices.IndexFunc(steps, func(s node.Step) bool { return s.Name == stepContainersFeature })
	require.NotEqual(t, -1, i)
	good := string(steps[i].Script)
	for name, bad := range map[string]string{
		"unclosed if":          strings.Replace(good, "if ($restart) {", "if ($restart {", 1),
		"unbalanced brace":     strings.Replace(good, "\r\n}\r\n", "\r\n", 1),
		"undoubled quote":      good + "Write-Host 'it's'\r\n",
		"unterminated literal": good + "$x = 'open\r\n",
	} {
		assert.NotEqual(t, good, bad, name)
		assert.Error(t, pwsh.Check([]byte(bad)), name)
	}
}

// TestWindowsCloserPowersOffInFinally: in the parsed closer, the closing
// commands are the try block and the power-off is its finally clause, so
// Windows powers off also when a closing command fails.
func TestWindowsCloserPowersOffInFinally(t *testing.T) {
	tree, err := pwsh.Parse([]byte(windowsTransportCloser()))
	require.NoError(t, err)
	defer tree.Close()
	require.Empty(t, tree.Errors())
	finally := tree.Nodes("finally_clause")
	require.Len(t, finally, 1)
	assert.Contains(t, finally[0], "shutdown.exe /s /t 0 /f")
	tries := tree.Nodes("try_statement")
	require.Len(t, tries, 1)
	closing := strings.TrimSuffix(tries[0], finally[0])
	for _, want := range []string{"Remove-NetFirewallRule", `WSMan:\localhost\Service\Auth\Basic`, `WSMan:\localhost\Service\AllowUnencrypted`, `WSMan:\localhost\Listener\*`} {
		assert.Contains(t, closing, want)
	}
	assert.NotContains(t, closing, "shutdown.exe")
}

// TestWindowsKubeletStepChecksTheVersions: in the parsed kubelet step, an
// if statement per binary compares what it reports with
// kubernetes_version and throws naming both, before the service is set up.
func TestWindowsKubeletStepChecksTheVersions(t *testing.T) {
	for name, p := range windowsCases(t) {
		p = p.WithDefaults()
		script, err := windowsKubelet(p)
		require.NoError(t, err, name)
		tree, err := pwsh.Parse(script)
		require.NoError(t, err)
		require.Empty(t, tree.Errors(), name)
		var checks []string
		for _, n := range tree.Nodes("if_statement") {
			if strings.Contains(n, "throw ('kubernetes_version is ") {
				checks = append(checks, n)
			}
		}
		tree.Close()
		require.Len(t, checks, 2, name)
		ver := p.Kubernetes.Version
		for i, bin := range []string{"kubelet", "kubeadm"} {
			assert.Contains(t, checks[i], "if ($version -cne '"+ver+"')", name)
			assert.Contains(t, checks[i], "'kubernetes_version is "+ver+" but the "+bin+" at C:\\k\\"+bin+".exe reports ' + $version + ': give the "+bin+" of "+ver, name)
		}
		s := string(script)
		assert.Less(t, strings.Index(s, "kubernetes_version is "), strings.Index(s, "sc.exe"), "%s: checked before the service is registered", name)
	}
}

// TestCloneFirstBootPartsFailAlone: in the parsed first-boot script, each
// closing is the try block of its own try statement, whose catch logs the
// failure, so one that fails does not skip the next; the exit code comes
// after all of them.
func TestCloneFirstBootPartsFailAlone(t *testing.T) {
	p := basePlan(t)
	p.RandomClonePassword = true
	script := windowsFirstBoot(p)
	tree, err := pwsh.Parse(script)
	require.NoError(t, err)
	defer tree.Close()
	require.Empty(t, tree.Errors())
	tries := tree.Nodes("try_statement")
	parts := []string{"Start-Transcript -Path", "throw 'no local account with relative ID 500'", "Set-LocalUser -SID $admin.SID -Password $password", "Disable-LocalUser -SID $sid", "'AllowBasic', 'AllowUnencryptedTraffic'", "Remove-NetFirewallRule -Name $rule", "Set-Service -Name $name -StartupType Disabled"}
	var top []string
	for _, n := range tries {
		if strings.Contains(n, "$failed = $true") {
			top = append(top, n)
		}
	}
	require.Len(t, top, len(parts))
	for i, want := range parts {
		assert.Contains(t, top[i], want)
		for j, other := range parts {
			if j != i {
				assert.NotContains(t, top[i], other)
			}
		}
	}
	s := string(script)
	assert.Greater(t, strings.Index(s, "if ($failed) {"), strings.Index(s, top[len(top)-1]))
}
