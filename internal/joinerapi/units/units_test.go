// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package units

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommandLineQuoting(t *testing.T) {
	// Expected forms follow Microsoft's "Parsing C++ command-line arguments"
	// rules, which CommandLineToArgvW (the service manager's parser) uses.
	for in, want := range map[string]string{
		`C:\k\kubelet.exe`:      `C:\k\kubelet.exe`,
		`a b c`:                 `"a b c"`,
		`ab"c`:                  `"ab\"c"`,
		`a\\b c`:                `"a\\b c"`,
		`a\"b`:                  `"a\\\"b"`,
		`C:\Program Files\`:     `"C:\Program Files\\"`,
		``:                      `""`,
		`--resolv-conf=`:        `--resolv-conf=`,
		`--node-labels=a=b,c=d`: `--node-labels=a=b,c=d`,
	} {
		assert.Equal(t, want, CommandLine([]string{in}), "quoting %q", in)
	}
	assert.Equal(t, `C:\k\kube-log-runner.exe "--log-file=C:/var/log/a b.log"`,
		CommandLine([]string{`C:\k\kube-log-runner.exe`, "--log-file=C:/var/log/a b.log"}))
}

func TestParseKubeadmFlags(t *testing.T) {
	env := "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=npipe:////./pipe/containerd-containerd --hostname-override=win-1 --node-labels=kubenode.io/os=windows --pod-infra-container-image=registry.k8s.io/pause:3.10\"\r\n"
	flags, err := ParseKubeadmFlags(env)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"--container-runtime-endpoint=npipe:////./pipe/containerd-containerd",
		"--hostname-override=win-1",
		"--node-labels=kubenode.io/os=windows",
		"--pod-infra-container-image=registry.k8s.io/pause:3.10",
	}, flags)

	_, err = ParseKubeadmFlags("# nothing\n")
	require.ErrorContains(t, err, "KUBELET_KUBEADM_ARGS")
}

func TestWithKubeletFlagsReplacesInPlaceAndAppends(t *testing.T) {
	base := WindowsKubeletArgs(false)
	got := WithKubeletFlags(base, "--container-runtime-endpoint=npipe:////./pipe/other", "--node-labels=a.example/x=y", "--v=2")
	require.Len(t, got, len(base)+2)
	assert.Equal(t, base[:3], got[:3], "kube-log-runner and its --log-file are not kubelet flags")
	assert.Contains(t, got, "--container-runtime-endpoint=npipe:////./pipe/other")
	assert.NotContains(t, got, "--container-runtime-endpoint="+WindowsCRIEndpoint)
	assert.Equal(t, []string{"--node-labels=a.example/x=y", "--v=2"}, got[len(base):])
	// --log-file before kubelet.exe belongs to kube-log-runner: a kubelet
	// --log-file is a new flag, not a replacement.
	got = WithKubeletFlags(base, "--log-file=C:/other.log")
	assert.Equal(t, "--log-file="+WindowsKubeletLog, got[1])
	assert.Equal(t, "--log-file=C:/other.log", got[len(got)-1])
}

// From Kubernetes v1.34 kube-log-runner rotates the log itself; its
// options go before the kubelet, where the kubelet never sees them.
func TestWindowsKubeletArgsRotation(t *testing.T) {
	plain, rotating := WindowsKubeletArgs(false), WindowsKubeletArgs(true)
	assert.Equal(t, []string{`C:\k\kube-log-runner.exe`, "--log-file=C:/var/log/kubelet/kubelet.log", `C:\k\kubelet.exe`}, plain[:3])
	assert.Equal(t, []string{`C:\k\kube-log-runner.exe`, "--log-file=C:/var/log/kubelet/kubelet.log",
		"--log-file-size=100Mi", "--log-file-age=168h0m0s", `C:\k\kubelet.exe`}, rotating[:5])
	assert.Equal(t, plain[2:], rotating[4:], "the kubelet's arguments are the same")
	assert.NotContains(t, strings.Join(plain, " "), "--log-file-size", "an older kube-log-runner refuses it")
}

func TestSplitCommandLineUndoesCommandLine(t *testing.T) {
	for _, argv := range [][]string{
		WindowsKubeletArgs(true),
		{`C:\Program Files\containerd\containerd.exe`, "--run-service"},
		{`C:\k\kube-log-runner.exe`, "--log-file=C:/var/log/a b.log", `C:\k\kubelet.exe`, "--resolv-conf=", ""},
		{"x.exe", `ab"c`, `a\\b c`, `a\"b`, `C:\Program Files\`, `tab	in`, `\\server\share\`, `""`},
	} {
		assert.Equal(t, argv, SplitCommandLine(CommandLine(argv)), "%q", argv)
	}
	// Written by hand, as sc.exe shows them.
	assert.Equal(t, []string{`C:\k\kube-log-runner.exe`, "--log-file=C:/var/log/kubelet/kubelet.log", `C:\k\kubelet.exe`, "--v=2"},
		SplitCommandLine(`  C:\k\kube-log-runner.exe   --log-file=C:/var/log/kubelet/kubelet.log	C:\k\kubelet.exe --v=2 `))
	assert.Equal(t, []string{`C:\Program Files\x.exe`, `a"b`, "c d"}, SplitCommandLine(`"C:\Program Files\x.exe" "a""b" c" "d`))
	assert.Nil(t, SplitCommandLine("  "))
}

// The joiner re-registers the kubelet service with kubeadm's flags: the
// image's kube-log-runner options (its rotation) stay, the kubelet's
// arguments are rebuilt with the flags, and doing it again changes
// nothing.
func TestKubeletServiceArgvKeepsTheImagesLogRunner(t *testing.T) {
	image := WithKubeletFlags(WindowsKubeletArgs(true), "--windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS")
	flags := []string{"--hostname-override=win-1", "--windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS", "--system-reserved=memory=2Gi"}
	got := KubeletServiceArgv(SplitCommandLine(CommandLine(image)), flags...)
	assert.Equal(t, WithKubeletFlags(WindowsKubeletArgs(true), flags...), got)
	assert.Equal(t, got, KubeletServiceArgv(SplitCommandLine(CommandLine(got)), flags...), "a second run")

	// A flag the image's kubelet had that flags lack is not kept: the
	// joiner's configuration carries the image's kubelet flags.
	assert.NotContains(t, KubeletServiceArgv(SplitCommandLine(CommandLine(image)), "--v=2"), "--windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS")
	// Not a command line kubenode-bake registered: the runner every
	// kube-log-runner takes.
	for _, current := range []string{"", `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe -File C:\k\StartKubelet.ps1`, `C:\k\kubelet.exe --v=2`} {
		assert.Equal(t, WithKubeletFlags(WindowsKubeletArgs(false), flags...), KubeletServiceArgv(SplitCommandLine(current), flags...), "%q", current)
	}
}

func TestSystemdUnitRunsUntilJoined(t *testing.T) {
	unit := SystemdUnit("/etc/kubernetes/kubelet.conf")
	assert.Contains(t, unit, "ConditionPathExists=!/etc/kubernetes/kubelet.conf\n")
	assert.Contains(t, unit, "ExecStart="+LinuxJoinerPath+" join\n")
	assert.Contains(t, unit, "Type=oneshot\n")
	assert.True(t, strings.HasSuffix(unit, "WantedBy=multi-user.target\n"))
}

// The joiner reads the host name (its default node name) after
// kubenode-hostname has given a clone nothing named a name of its own;
// After= alone, so an image without that unit is fine.
func TestSystemdUnitRunsAfterTheCloneIsNamed(t *testing.T) {
	unit := SystemdUnit("/etc/kubernetes/kubelet.conf")
	assert.Contains(t, unit, "\nAfter=network-online.target containerd.service "+LinuxHostnameServiceName+".service\n")
	assert.NotContains(t, unit, "Wants="+LinuxHostnameServiceName)
	assert.NotContains(t, unit, "Requires=")
}
