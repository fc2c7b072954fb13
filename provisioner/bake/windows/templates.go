// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"embed"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"unicode"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/psquote"
	"github.com/kubenode/packer-plugin-kubenode/internal/scripttmpl"
)

// Every script the bake runs on a Windows guest is a template file under
// scripts/, one folder per area: steps (one file per step, and the
// fragments they share), update, clusterapi, permissions, selfcheck and
// sysprep. scripts/common holds the header every script starts with and
// the helper functions a script defines before its body. The files are
// kept with LF line ends and parsed with CRLF ones (scripttmpl.CRLF):
// every line a template writes ends with CRLF, and a value keeps its own
// line ends. A file named *.lf.* keeps LF.
//
//go:embed scripts/*/*.tmpl
var templateFiles embed.FS

// templates are those files, parsed once. Every value they print goes
// through one of safeFuncs.
var templates = scripttmpl.MustParse(scripttmpl.CRLF(templateFiles), "scripts/*/*.tmpl", funcs, safeFuncs...)

// renderStep renders the script of scripts/steps/<step>.ps1.tmpl.
func renderStep(step string, data any) []byte {
	return templates.Render(step+".ps1.tmpl", data)
}

// funcs are the templates' functions. Each but join prints a value quoted
// for PowerShell or cmd.exe, a value it refuses when quoting cannot help,
// or a fixed fragment.
var funcs = template.FuncMap{
	// bom is the UTF-8 byte order mark a script saved to a file starts with.
	"bom": func() string { return psquote.UTF8BOM },
	// q joins its parts into one single-quoted literal.
	"q": func(parts ...string) string { return psquote.Quote(strings.Join(parts, "")) },
	// array is an array expression, one quoted value a line.
	"array": psquote.Array,
	// list is a one-line array expression: @('a', 'b').
	"list": quotedList,
	// items are quoted values separated by commas, for inside @(...).
	"items": quotedItems,
	// num is an integer in decimal, hex one in upper-case hexadecimal.
	"num": number,
	"hex": func(n int) string { return fmt.Sprintf("%X", n) },
	// comment is text on a # line: it may not end the line.
	"comment": commentText,
	// ident is a PowerShell variable or property name, written bare.
	"ident": identifier,
	// cmdPath is a path between double quotes in a .cmd script.
	"cmdPath": cmdPath,
	// cmdWord is a bare word in a .cmd script.
	"cmdWord": cmdWord,
	// Fixed fragments.
	"builtinAdmin":      func() string { return builtinAdmin },
	"firstBootCommand":  func() string { return firstBootCommand },
	"setupCompleteMark": func() string { return setupCompleteMark },
	"serialWriter":      serialWriter,
	// join is not safe: its result goes on into q.
	"join": strings.Join,
}

// safeFuncs are the functions whose result a template may print.
var safeFuncs = []string{"bom", "q", "array", "list", "items", "num", "hex", "comment", "ident", "cmdPath", "cmdWord",
	"builtinAdmin", "firstBootCommand", "setupCompleteMark", "serialWriter"}

// quotedList is a one-line array expression.
func quotedList(values []string) string { return "@(" + quotedItems(values) + ")" }

// quotedItems quotes each value and joins them with ", ".
func quotedItems(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = psquote.Quote(v)
	}
	return strings.Join(quoted, ", ")
}

// number prints an integer; anything else is a bug of the program.
func number(v any) string {
	switch v := v.(type) {
	case int:
		return strconv.Itoa(v)
	case uint32:
		return strconv.FormatUint(uint64(v), 10)
	default:
		panic(fmt.Sprintf("num: %T is not an integer", v))
	}
}

// commentText refuses what would end a comment line.
func commentText(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }) {
		panic(fmt.Sprintf("comment: %q does not fit on a comment line", s))
	}
	return s
}

var identifierRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// identifier refuses anything but a name of letters, digits and
// underscores.
func identifier(name string) string {
	if !identifierRE.MatchString(name) {
		panic(fmt.Sprintf("ident: %q is not a plain name", name))
	}
	return name
}

// cmdPath refuses what cmd.exe reads inside double quotes: the quote that
// ends them, % that expands a variable, and line ends.
func cmdPath(s string) string {
	if strings.ContainsAny(s, "\"%\r\n") || strings.ContainsFunc(s, unicode.IsControl) {
		panic(fmt.Sprintf("cmdPath: %q cannot be quoted for cmd.exe", s))
	}
	return s
}

// cmdWord refuses anything but a bare cmd.exe word.
func cmdWord(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	}) {
		panic(fmt.Sprintf("cmdWord: %q is not a bare cmd.exe word", s))
	}
	return s
}

// serialWriter is the answer file's Write-KubenodeSerial, whose lines
// start with prefix.
func serialWriter(prefix string) string { return autounattend.WindowsSerialWriter(prefix) }
