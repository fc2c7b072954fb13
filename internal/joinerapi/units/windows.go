// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package units

import (
	"slices"
	"strconv"
	"strings"
	"time"
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

// The kubelet's log on Windows is rotated: once kubelet.log has grown past
// KubeletLogMaxBytes it is moved aside as kubelet-<time>.log, and logs moved
// aside more than KubeletLogMaxAge ago are removed. kube-log-runner does it
// itself from Kubernetes v1.34 (WindowsKubeletArgs with rotate); for older
// releases kubenode-bake schedules a task that does the same.
const (
	KubeletLogMaxBytes = 100 << 20
	KubeletLogMaxAge   = 7 * 24 * time.Hour
)

// WindowsKubeletArgs is the kubelet's service command line before kubeadm
// has run: kube-log-runner writes the kubelet's output to a file, rotated
// by kube-log-runner itself when rotate (its -log-file-size and
// -log-file-age, which an older kube-log-runner refuses), and the kubelet
// reads kubeadm's files at their Windows locations.
func WindowsKubeletArgs(rotate bool) []string {
	argv := []string{WindowsKubeDir + `\kube-log-runner.exe`, "--log-file=" + WindowsKubeletLog}
	if rotate {
		argv = append(argv, "--log-file-size="+strconv.Itoa(KubeletLogMaxBytes>>20)+"Mi", "--log-file-age="+KubeletLogMaxAge.String())
	}
	return append(argv,
		WindowsKubeDir+`\kubelet.exe`,
		"--windows-service",
		"--cert-dir=C:/var/lib/kubelet/pki",
		"--config=C:/var/lib/kubelet/config.yaml",
		"--bootstrap-kubeconfig=C:/etc/kubernetes/bootstrap-kubelet.conf",
		"--kubeconfig=C:/etc/kubernetes/kubelet.conf",
		"--enable-debugging-handlers",
		"--cgroups-per-qos=false",
		"--enforce-node-allocatable=",
		"--container-runtime-endpoint="+WindowsCRIEndpoint,
		"--resolv-conf=",
	)
}

// KubeletIndex is the index of the kubelet binary in argv, -1 if none:
// what comes before it runs the kubelet (kube-log-runner and its options).
func KubeletIndex(argv []string) int {
	return slices.IndexFunc(argv, func(a string) bool { return strings.HasSuffix(strings.ToLower(a), `\kubelet.exe`) })
}

// KubeletServiceArgv is the kubelet service's command line with flags, as
// the joiner registers it around kubeadm join. What runs the kubelet
// (kube-log-runner and its options: everything before the kubelet binary)
// is kept from current, the service's command line as the image
// registered it, so the image's choice of log rotation survives the join;
// the kubelet's own arguments are WindowsKubeletArgs's with flags set
// (WithKubeletFlags). A current without the kubelet binary (a service
// kubenode-bake did not register) gets WindowsKubeletArgs's runner without
// rotation, which every kube-log-runner takes.
func KubeletServiceArgv(current []string, flags ...string) []string {
	base := WindowsKubeletArgs(false)
	runner := base[:KubeletIndex(base)]
	if i := KubeletIndex(current); i > 0 {
		runner = current[:i]
	}
	return WithKubeletFlags(slices.Concat(runner, base[KubeletIndex(base):]), flags...)
}

// WithKubeletFlags returns argv with flags set: a flag already in argv
// (after the kubelet binary) takes the new value in place, a new one is
// appended. Flags are "--name=value" or "--name".
func WithKubeletFlags(argv []string, flags ...string) []string {
	out := slices.Clone(argv)
	start := KubeletIndex(out) + 1
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

// SplitCommandLine splits a Windows command line (a service's binPath)
// into its arguments by the rules of CommandLineToArgvW, undoing
// CommandLine. The first argument, the program, ends at the first space
// or tab, or, when it starts with a quote, at the next quote. In the
// others, spaces and tabs outside quotes separate arguments; 2n
// backslashes before a quote are n backslashes and the quote opens or
// closes a quoted part, 2n+1 are n backslashes and a literal quote; two
// quotes inside a quoted part are one literal quote; other backslashes
// are themselves.
func SplitCommandLine(line string) []string {
	s := strings.TrimLeft(line, " \t")
	if s == "" {
		return nil
	}
	var args []string
	if s[0] == '"' {
		program, rest, _ := strings.Cut(s[1:], `"`)
		args, s = append(args, program), rest
	} else {
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			return []string{s}
		}
		args, s = append(args, s[:end]), s[end:]
	}
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return args
		}
		var b strings.Builder
		quoted, i := false, 0
	arg:
		for i < len(s) {
			switch c := s[i]; {
			case c == '\\':
				n := 0
				for ; i < len(s) && s[i] == '\\'; i++ {
					n++
				}
				if i < len(s) && s[i] == '"' {
					b.WriteString(strings.Repeat(`\`, n/2))
					if n%2 == 1 {
						b.WriteByte('"')
						i++
					}
				} else {
					b.WriteString(strings.Repeat(`\`, n))
				}
			case c == '"' && quoted && i+1 < len(s) && s[i+1] == '"':
				b.WriteByte('"')
				i += 2
			case c == '"':
				quoted = !quoted
				i++
			case !quoted && (c == ' ' || c == '\t'):
				break arg
			default:
				b.WriteByte(c)
				i++
			}
		}
		args, s = append(args, b.String()), s[i:]
	}
}
