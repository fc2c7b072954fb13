package windows

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"text/template"
	"unicode"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
	"github.com/kubenode/packer-plugin-kubenode/internal/scripttmpl"
)

// The scripts of Windows Update, cloudbase-init, the permissions step,
// the self-check, sysprep and each clone's first boot are template files
// under scripts/; scripts/common holds the preamble and the helper
// functions they define. The files are kept with LF line ends and parsed
// with CRLF ones (crlfFS): every line a template writes ends with CRLF,
// and a value keeps its own line ends. A file named *.lf.* keeps LF.
//
//go:embed scripts/common/*.tmpl scripts/sysprep/*.tmpl scripts/permissions/*.tmpl scripts/update/*.tmpl scripts/clusterapi/*.tmpl scripts/selfcheck/*.tmpl
var generalizeFiles embed.FS

// generalizeTemplates are those templates, parsed once. Every value they
// print goes through one of generalizeSafe.
var generalizeTemplates = scripttmpl.MustParse(crlfFS{generalizeFiles}, "scripts/*/*.tmpl", generalizeFuncs, generalizeSafe...)

// generalizeFuncs are the templates' functions.
var generalizeFuncs = template.FuncMap{
	// bom starts a script Windows PowerShell 5.1 reads from a file.
	"bom": func() string { return powershell.UTF8BOM },
	// quote joins its parts into one single-quoted PowerShell literal.
	"quote": func(parts ...string) string { return powershell.Quote(strings.Join(parts, "")) },
	// array is an array expression, one quoted value a line.
	"array": powershell.Array,
	// list is a one-line array expression of quoted values.
	"list": generalizeList,
	"num":  strconv.Itoa,
	"hex":  func(n int) string { return fmt.Sprintf("%X", n) },
	// comment is text on a # line: it may not end the line.
	"comment": generalizeComment,
	// ident is a PowerShell property name, written bare.
	"ident": generalizeIdent,
	// cmdPath is a path between double quotes in a .cmd script.
	"cmdPath": generalizeCmdPath,
	// cmdWord is a bare word in a .cmd script.
	"cmdWord": generalizeCmdWord,
	// Fixed fragments.
	"builtinAdmin":      func() string { return windowsBuiltinAdmin },
	"firstBootCommand":  func() string { return windowsFirstBootCommand },
	"setupCompleteMark": func() string { return windowsSetupCompleteMark },
	"serialWriter":      generalizeSerialWriter,
	// join is not safe: its result goes on into quote.
	"join": strings.Join,
}

// generalizeSafe are the functions whose result a template may print.
var generalizeSafe = []string{"bom", "quote", "array", "list", "num", "hex", "comment", "ident", "cmdPath", "cmdWord", "builtinAdmin", "firstBootCommand", "setupCompleteMark", "serialWriter"}

func generalizeList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = powershell.Quote(v)
	}
	return "@(" + strings.Join(quoted, ", ") + ")"
}

// generalizeComment refuses what would end a comment line.
func generalizeComment(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }) {
		panic(fmt.Sprintf("windows: %q does not fit on a comment line", s))
	}
	return s
}

func generalizeIdent(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '_' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	}) {
		panic(fmt.Sprintf("windows: %q is not a PowerShell property name", s))
	}
	return s
}

// generalizeCmdPath refuses what cmd.exe reads inside double quotes: the
// quote that ends them, % that expands a variable, and line ends.
func generalizeCmdPath(s string) string {
	if strings.ContainsAny(s, "\"%\r\n") || strings.ContainsFunc(s, unicode.IsControl) {
		panic(fmt.Sprintf("windows: %q cannot be quoted for cmd.exe", s))
	}
	return s
}

func generalizeCmdWord(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	}) {
		panic(fmt.Sprintf("windows: %q is not a bare cmd.exe word", s))
	}
	return s
}

// generalizeSerialWriter is the answer file's Write-KubenodeSerial, whose
// lines start with prefix.
func generalizeSerialWriter(prefix string) string {
	var s powershell.Script
	autounattend.WindowsSerialWriter(&s, prefix)
	return strings.TrimSuffix(string(s.Bytes()), "\r\n")
}

// crlfFS reads its files with CRLF line ends, but those named *.lf.*.
type crlfFS struct{ fs.FS }

func (c crlfFS) ReadFile(name string) ([]byte, error) {
	b, err := fs.ReadFile(c.FS, name)
	if err != nil || strings.Contains(path.Base(name), ".lf.") {
		return b, err
	}
	return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")), nil
}
