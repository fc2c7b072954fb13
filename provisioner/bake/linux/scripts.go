// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"embed"
	"fmt"
	"path"
	"regexp"
	"strings"
	"text/template"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/internal/scripttmpl"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// The Linux bake's scripts are template files, one a step, with the
// pieces they share in lib.sh.tmpl.
//
//go:embed scripts/*.sh.tmpl
var scriptFiles embed.FS

var scripts *scripttmpl.Set

// Parsed in init rather than in the variable's initializer: some of the
// templates' functions (HostnameScript, LockScript, GrowrootScript) render
// a template themselves, a cycle no initializer may hold.
func init() {
	scripts = scripttmpl.MustParse(scriptFiles, "scripts/*.sh.tmpl", scriptFuncs(), safeFuncs()...)
}

// render renders the template of a step or a piece of one.
func render(name string, data any) []byte { return scripts.Render(name, data) }

// fixed are the names and paths the scripts share with the Go code and
// the joiner, printed as they are: each is checked once to need no
// quoting (plainFixed).
var fixed = map[string]string{
	"binDir":                   binDir,
	"cniBinDir":                cniBinDir,
	"cniConfDir":               cniConfDir,
	"joinerConf":               joinerConf,
	"certsDir":                 certsDir,
	"containerdConfD":          containerdConfD,
	"joinerPath":               units.LinuxJoinerPath,
	"joinerUnitPath":           units.LinuxUnitPath,
	"joinerService":            units.JoinerServiceName,
	"growrootUnit":             growrootUnit,
	"growrootUnitPath":         growrootUnitPath,
	"growrootScriptPath":       growrootScriptPath,
	"lockUnit":                 lockUnit,
	"lockUnitPath":             lockUnitPath,
	"lockScriptPath":           lockScriptPath,
	"hostnameUnit":             hostnameUnit,
	"hostnameUnitPath":         hostnameUnitPath,
	"hostnameScriptPath":       hostnameScriptPath,
	"buildHostnamesFile":       BuildHostnamesFile,
	"kernelHostname":           kernelHostname,
	"timeSyncUnits":            timeSyncUnits,
	"cloudCfgDir":              cloudCfgDir,
	"cloudInitDatasourcesFile": CloudInitDatasourcesFile,
	"cloudInitUnits":           cloudInitUnits,
	"cloudInitFinalUnit":       cloudInitFinalUnit,
	"containerdSocket":         containerdSocket,
	"sshUnits":                 sshUnits,
	"aptConf":                  aptConf,
	"curtinAptProxy":           curtinAptProxy,
	"cloudInitAptProxy":        cloudInitAptProxy,
	"aptTimers":                aptTimers,
	"k8sNS":                    node.ContainerdK8sNS,
	"imageListedPrefix":        node.ImageListedPrefix,
	"kubeadmImagePrefix":       node.KubeadmImagePrefix,
	"kubeadmPull":              node.KubeadmPull,
	"caFileName":               node.CAFileName,
	"cloneNetplan":             cloneNetplan,
}

// plainFixed is what a fixed fragment may hold: words and the spaces
// between them, nothing the shell reads otherwise in or out of quotes (no
// quote, $, backslash or glob).
var plainFixed = regexp.MustCompile(`^[A-Za-z0-9 _./:@+=,-]+$`)

// plainWord is what bare prints: one word the shell reads as it is.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:@+=,-]+$`)

func scriptFuncs() template.FuncMap {
	funcs := template.FuncMap{
		// Safe: quoting, and fixed fragments chosen from typed data.
		"q":         q,
		"sq":        sq,
		"dq":        dq,
		"qwords":    qwords,
		"bare":      bare,
		"comment":   comment,
		"mode":      func(m int) string { return fmt.Sprintf("%04o", m) },
		"delim":     func(f heredocFile) string { return f.delim() },
		"body":      func(f heredocFile) string { return f.body() },
		"seconds":   seconds,
		"aptGet":    aptGet,
		"suffixLen": func() int { return HostnameSuffixLen },

		// Values, printed only through a safe function.
		"file":                       func(path string, mode int, content string) heredocFile { return heredocFile{path, mode, content} },
		"list":                       func(v ...string) []string { return v },
		"words":                      func(v []string) string { return strings.Join(v, " ") },
		"commas":                     func(v []string) string { return strings.Join(v, ", ") },
		"text":                       func(b []byte) string { return string(b) },
		"join":                       path.Join,
		"proxyEnv":                   proxyEnv,
		"proxyDropIn":                ProxyDropIn,
		"containerdConfig":           ContainerdConfig,
		"registryHosts":              registryHosts,
		"bridgeConflist":             BridgeConflist,
		"kubeVersionCheck":           func(binDir, want string) kubeVersionCheck { return kubeVersionCheck{binDir, want} },
		"joinerUnit":                 func() string { return units.SystemdUnit(kubeletConf) },
		"heldTimersFile":             heldTimersFile,
		"growrootScript":             GrowrootScript,
		"growrootUnitFile":           func() string { return growrootUnitFile },
		"lockScript":                 LockScript,
		"lockUnitFile":               func() string { return lockUnitFile },
		"hostnameScript":             HostnameScript,
		"hostnameUnitFile":           func() string { return hostnameUnitFile },
		"cloudInitDatasourcesConfig": CloudInitDatasourcesConfig,
		"cloudInitLeftovers":         func() []string { return cloudInitLeftovers },
		"installerNetwork":           func() []string { return installerNetwork },
		"cloneNetplanFile":           func() string { return cloneNetplanFile },
		"normalizedImages":           node.NormalizedImages,
		"aptProxyLineRegexp":         func() string { return aptProxyLineRegexp },
		"hostsHeader":                func() string { return node.HostsHeader },
		"pinnedLabel":                func() string { return node.PinnedLabel },
		"archiveLabelKey":            func() string { return node.ArchiveLabelKey },
	}
	for name, v := range fixed {
		if !plainFixed.MatchString(v) {
			panic(fmt.Sprintf("linux: the fixed fragment %s = %q needs quoting", name, v))
		}
		funcs[name] = func() string { return v }
	}
	return funcs
}

// safeFuncs are the functions whose result a script may print: the
// quoting functions and those returning a fixed fragment.
func safeFuncs() []string {
	safe := []string{"q", "sq", "dq", "qwords", "bare", "comment", "mode", "delim", "body", "seconds", "aptGet", "suffixLen"}
	for name := range fixed {
		safe = append(safe, name)
	}
	return safe
}

// q quotes a value for the shell.
func q(v string) string { return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'" }

// sq quotes a value for inside a single-quoted string.
func sq(v string) string { return strings.ReplaceAll(v, "'", `'\''`) }

// dq quotes a value for inside a double-quoted string.
func dq(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(v)
}

// qwords quotes each value, separated by spaces.
func qwords(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = q(v)
	}
	return strings.Join(quoted, " ")
}

// bare prints a word that needs no quoting, and refuses any other.
func bare(v string) (string, error) {
	if !plainWord.MatchString(v) {
		return "", fmt.Errorf("%q is not a plain word: quote it", v)
	}
	return v, nil
}

// comment is text for a comment line: a newline starts another comment.
func comment(v string) string { return strings.ReplaceAll(v, "\n", "\n# ") }

// heredocFile is a file a script writes through put, its content a
// quoted here-document (lib.sh.tmpl's file and put). body and delim are
// safe only there, together: nothing in a quoted here-document is
// expanded, and delim ends it with a line the content does not hold.
type heredocFile struct {
	Path    string
	Mode    int
	Content string
}

// delim ends the here-document: a line the content does not hold.
func (f heredocFile) delim() string {
	d := "KUBENODE_EOF"
	for strings.Contains(f.Content, d) {
		d += "_"
	}
	return d
}

// body is the content, ending with a newline.
func (f heredocFile) body() string {
	if !strings.HasSuffix(f.Content, "\n") {
		return f.Content + "\n"
	}
	return f.Content
}
