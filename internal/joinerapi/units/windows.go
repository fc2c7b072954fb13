package units

import (
	"slices"
	"strconv"
	"strings"
)

// Windows locations (WINDOWS.md, "kubelet on Windows").
const (
	WindowsKubeDir     = `C:\k`
	WindowsJoinerPath  = WindowsKubeDir + `\kubenode-joiner.exe`
	WindowsKubeletLog  = `C:/var/log/kubelet/kubelet.log`
	WindowsCRIEndpoint = "npipe:////./pipe/containerd-containerd"
	// KubeletServiceName and ContainerdServiceName are the services the
	// joiner starts, containerd first.
	KubeletServiceName    = "kubelet"
	ContainerdServiceName = "containerd"
	// ServiceRestartDelayMS is how long the service manager waits before it
	// restarts the kubelet or containerd after a failure, every time (the
	// failure count resets at once), as Kubernetes' GCE Windows nodes do
	// (cluster/gce/windows/k8s-node-setup.psm1).
	ServiceRestartDelayMS = 10000
)

// RestartOnFailureServices are the services restarted after a failure.
var RestartOnFailureServices = []string{ContainerdServiceName, KubeletServiceName}

// ServiceRestartOnFailureArgs are sc.exe's arguments after `failure <name>`
// for ServiceRestartDelayMS.
func ServiceRestartOnFailureArgs() []string {
	return []string{"reset=", "0", "actions=", "restart/" + strconv.Itoa(ServiceRestartDelayMS)}
}

// JoinerServiceArgs is the joiner's Windows service command line: it runs
// `join` under the service control manager.
func JoinerServiceArgs() []string {
	return []string{WindowsJoinerPath, "join", "--windows-service"}
}

// WindowsKubeletArgs is the kubelet's service command line before kubeadm
// has run: kube-log-runner writes the kubelet's output to a file, and the
// kubelet reads kubeadm's files at their Windows locations.
func WindowsKubeletArgs() []string {
	return []string{
		WindowsKubeDir + `\kube-log-runner.exe`,
		"--log-file=" + WindowsKubeletLog,
		WindowsKubeDir + `\kubelet.exe`,
		"--windows-service",
		"--cert-dir=C:/var/lib/kubelet/pki",
		"--config=C:/var/lib/kubelet/config.yaml",
		"--bootstrap-kubeconfig=C:/etc/kubernetes/bootstrap-kubelet.conf",
		"--kubeconfig=C:/etc/kubernetes/kubelet.conf",
		"--enable-debugging-handlers",
		"--cgroups-per-qos=false",
		"--enforce-node-allocatable=",
		"--container-runtime-endpoint=" + WindowsCRIEndpoint,
		"--resolv-conf=",
	}
}

// WithKubeletFlags returns argv with flags set: a flag already in argv
// (after the kubelet binary) takes the new value in place, a new one is
// appended. Flags are "--name=value" or "--name".
func WithKubeletFlags(argv []string, flags ...string) []string {
	out := slices.Clone(argv)
	start := slices.IndexFunc(out, func(a string) bool { return strings.HasSuffix(strings.ToLower(a), `\kubelet.exe`) }) + 1
	for _, f := range flags {
		name := flagName(f)
		if name == "" {
			continue
		}
		i := slices.IndexFunc(out[start:], func(a string) bool { return flagName(a) == name })
		if i >= 0 {
			out[start+i] = f
		} else {
			out = append(out, f)
		}
	}
	return out
}

func flagName(arg string) string {
	if !strings.HasPrefix(arg, "--") {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
	return name
}

// ParseKubeadmFlags reads the KUBELET_KUBEADM_ARGS value of kubeadm's
// kubeadm-flags.env (one line: KUBELET_KUBEADM_ARGS="--a=b --c=d"). kubeadm
// writes each flag as --name=value with no spaces inside a value.
func ParseKubeadmFlags(env string) ([]string, error) {
	for _, line := range strings.Split(env, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		v, ok := strings.CutPrefix(line, "KUBELET_KUBEADM_ARGS=")
		if !ok {
			continue
		}
		v = strings.TrimSuffix(strings.TrimPrefix(v, `"`), `"`)
		return strings.Fields(v), nil
	}
	return nil, errNoKubeadmArgs
}

var errNoKubeadmArgs = errorString("kubeadm-flags.env has no KUBELET_KUBEADM_ARGS line")

type errorString string

func (e errorString) Error() string { return string(e) }

// CommandLine joins argv into one Windows command line (a service's
// binPath), quoting each argument by the rules CommandLineToArgvW undoes:
// an argument with spaces, tabs or quotes (or an empty one) is wrapped in
// quotes; backslashes are doubled only before a quote.
func CommandLine(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = quoteArg(a)
	}
	return strings.Join(parts, " ")
}

func quoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0 // backslashes just written: doubled if a quote follows
	for _, c := range []byte(s) {
		switch c {
		case '\\':
			slashes++
		case '"':
			b.WriteString(strings.Repeat(`\`, slashes+1))
			slashes = 0
		default:
			slashes = 0
		}
		b.WriteByte(c)
	}
	b.WriteString(strings.Repeat(`\`, slashes))
	b.WriteByte('"')
	return b.String()
}
