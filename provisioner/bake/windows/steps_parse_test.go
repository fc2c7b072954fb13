// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build pwsh

package windows

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/psparse"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// TestWindowsScriptsParse parses every generated Windows script (all golden
// cases, the artifact check and the flow's own commands) with the
// tree-sitter PowerShell grammar.
func TestWindowsScriptsParse(t *testing.T) {
	scripts := map[string][]byte{
		"boot check": []byte(bootCheck),
		"OS query":   []byte(osQuery),
		// Run by the sysprep step as -EncodedCommand.
		"transport closer": []byte(transportCloser()),
		// Run by the sysprep step as -EncodedCommand, before its uploads.
		"first-boot prepare": []byte(firstBootPrepare(basePlan(t))),
		// Run as -EncodedCommand before sysprep.
		"inventory query": []byte(inventoryQuery()),
	}
	for name, src := range renderedWindows(t) {
		if strings.HasSuffix(name, ".ps1") {
			scripts[name] = src
		}
	}
	require.Greater(t, len(scripts), 20)
	for name, src := range scripts {
		t.Run(name, func(t *testing.T) {
			assert.NoError(t, psparse.Check(src))
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
		assert.Error(t, psparse.Check([]byte(bad)), name)
	}
}

// TestWindowsCloserPowersOffInFinally: in the parsed closer, the closing
// commands are the try block and the power-off is its finally clause, so
// Windows powers off also when a closing command fails.
func TestWindowsCloserPowersOffInFinally(t *testing.T) {
	tree, err := psparse.Parse([]byte(transportCloser()))
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
	for name, p := range goldenPlans(t) {
		p = p.WithDefaults()
		script, err := kubelet(p)
		require.NoError(t, err, name)
		tree, err := psparse.Parse(script)
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
// after all of them. No part reads a variable another part set: a part
// after one that failed would read nothing there.
func TestCloneFirstBootPartsFailAlone(t *testing.T) {
	p := basePlan(t)
	p.RandomClonePassword = true
	p.NTPServers = []string{"time.example.com"}
	script := firstBoot(p)
	tree, err := psparse.Parse(script)
	require.NoError(t, err)
	defer tree.Close()
	require.Empty(t, tree.Errors())
	tries := tree.Nodes("try_statement")
	parts := []string{"Start-Transcript -Path", "Set-LocalUser -SID $admin.SID -Password $password", "Disable-LocalUser -SID $sid", "'AllowBasic', 'AllowUnencryptedTraffic'", "Remove-NetFirewallRule -Name $rule", "Set-Service -Name $name -StartupType Disabled", "& 'w32tm.exe' @w32tm", "Resize-Partition -DriveLetter $letter"}
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
		read, set := partVariables(t, top[i])
		for v := range read {
			assert.True(t, set[v] || firstBootGlobals[v], "part %d (%s) reads %s, which it does not set", i, want, v)
		}
	}
	s := string(script)
	assert.Greater(t, strings.Index(s, "if ($failed) {"), strings.Index(s, top[len(top)-1]))

	// The check finds a part that reads what another part set.
	read, set := partVariables(t, "try {\r\n    $x = $admin.SID.AccountDomainSid\r\n} catch {\r\n    $failed = $true\r\n}\r\n")
	assert.True(t, read["$admin"] && !set["$admin"])
}

// firstBootGlobals are the variables a first-boot part may read without
// setting them: PowerShell's own, and $failed, which only the catch sets.
var firstBootGlobals = map[string]bool{"$_": true, "$true": true, "$false": true, "$null": true, "$lastexitcode": true, "$failed": true}

// partVariables parses one part and returns the variables it reads and
// those it sets (by assignment or as a loop variable), in lower case.
func partVariables(t *testing.T, part string) (read, set map[string]bool) {
	t.Helper()
	tree, err := psparse.Parse([]byte(part))
	require.NoError(t, err)
	defer tree.Close()
	require.Empty(t, tree.Errors())
	read, set = map[string]bool{}, map[string]bool{}
	for _, v := range tree.Nodes("variable") {
		// A splatted @name reads $name.
		v = strings.ToLower(strings.Replace(v, "@", "$", 1))
		if !strings.HasPrefix(v, "$env:") {
			read[v] = true
		}
	}
	for _, left := range tree.Nodes("left_assignment_expression") {
		set[strings.ToLower(strings.TrimSpace(left))] = true
	}
	for _, loop := range tree.Nodes("foreach_statement") {
		if m := loopVariable.FindStringSubmatch(loop); m != nil {
			set[strings.ToLower(m[1])] = true
		}
	}
	return read, set
}

var loopVariable = regexp.MustCompile(`^foreach\s*\(\s*(\$\w+)\s+in\b`)

// TestCloneAdministratorFailsClosed: in the parsed first-boot script, the
// catch of the part that gives Administrator its own password disables the
// account, found again there, and logs it: a clone whose password could not
// be made does not keep the image's placeholder.
func TestCloneAdministratorFailsClosed(t *testing.T) {
	p := basePlan(t)
	p.RandomClonePassword = true
	tree, err := psparse.Parse(firstBoot(p))
	require.NoError(t, err)
	defer tree.Close()
	require.Empty(t, tree.Errors())
	var catch string
	for _, c := range tree.Nodes("catch_clause") {
		if strings.Contains(c, "'FAILED: the Administrator''s own password: '") {
			catch = c
		}
	}
	require.NotEmpty(t, catch, "the password part has a catch")
	assert.Contains(t, catch, "$builtin = "+builtinAdmin)
	assert.Contains(t, catch, "Disable-LocalUser -SID $builtin.SID")
	assert.Contains(t, catch, "Write-KubenodeSerial ('changed: the built-in Administrator ' + $builtin.SID.Value + ' disabled")
	assert.Contains(t, catch, "Write-KubenodeSerial ('FAILED: disabling the built-in Administrator: '")
	for _, try := range tree.Nodes("try_statement") {
		if strings.Contains(try, "Set-LocalUser -SID $admin.SID") {
			assert.NotContains(t, strings.TrimSuffix(try, catch), "Disable-LocalUser", "disabled only when the password failed")
		}
	}

	p.RandomClonePassword = false
	assert.NotContains(t, string(firstBoot(p)), "Disable-LocalUser -SID $builtin", "clone_admin_password set: Administrator has it")
}
