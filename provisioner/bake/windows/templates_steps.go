package windows

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
	"github.com/kubenode/packer-plugin-kubenode/internal/scripttmpl"
)

// The steps' scripts are the template files in scripts/steps, one per
// step (<step>.ps1.tmpl) and helpers.ps1.tmpl, whose {{define}}s the
// others share: the header every script starts with, the PowerShell
// functions a script defines before its body, the service and registry
// fragments. The files have LF line endings in the repository; the
// scripts are CRLF, as Windows PowerShell writes them, so the templates
// are read with CRLF (stepTemplateFS) and values keep their own line ends.
//
//go:embed scripts/steps/*.ps1.tmpl
var stepTemplateFiles embed.FS

// stepFuncs are the templates' functions; each prints a value quoted for
// PowerShell or a fragment chosen from typed data, so all are safe.
var stepFuncs = template.FuncMap{
	// q is a single-quoted literal.
	"q": powershell.Quote,
	// array is an array expression, one value a line.
	"array": powershell.Array,
	// list is an array expression on one line: @('a', 'b').
	"list": stepList,
	// items are literals separated by commas, for inside @(...).
	"items": stepItems,
	// num is an integer in decimal.
	"num": stepNumber,
	// comment is text for a # comment: one line.
	"comment": stepComment,
	// ident is a PowerShell variable name (an environment variable's).
	"ident": stepIdentifier,
	// bom is the UTF-8 byte order mark every script starts with.
	"bom": func() string { return powershell.UTF8BOM },
}

// stepSafeFuncs are the functions whose result a template may print: all.
var stepSafeFuncs = []string{"q", "array", "list", "items", "num", "comment", "ident", "bom"}

var stepTemplates = scripttmpl.MustParse(stepTemplateFS{stepTemplateFiles}, "scripts/steps/*.ps1.tmpl", stepFuncs, stepSafeFuncs...)

// renderStep renders the script of scripts/steps/<name>.ps1.tmpl.
func renderStep(name string, data any) []byte {
	return stepTemplates.Render(name+".ps1.tmpl", data)
}

// stepTemplateFS reads the template files with CRLF line endings.
type stepTemplateFS struct{ fs.FS }

func (f stepTemplateFS) ReadFile(name string) ([]byte, error) {
	b, err := fs.ReadFile(f.FS, name)
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")), nil
}

// stepList is a one-line array expression.
func stepList(values []string) string { return "@(" + stepItems(values) + ")" }

// stepItems quotes each value and joins them with ", ".
func stepItems(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = powershell.Quote(v)
	}
	return strings.Join(quoted, ", ")
}

// stepNumber prints an integer; anything else is a bug of the program.
func stepNumber(v any) string {
	switch v := v.(type) {
	case int:
		return strconv.Itoa(v)
	case uint32:
		return strconv.FormatUint(uint64(v), 10)
	default:
		panic(fmt.Sprintf("num: %T is not an integer", v))
	}
}

var stepIdentifierRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// stepIdentifier is a name made of letters, digits and underscores; any
// other is a bug of the program.
func stepIdentifier(name string) string {
	if !stepIdentifierRE.MatchString(name) {
		panic(fmt.Sprintf("ident: %q is not a plain name", name))
	}
	return name
}

// stepComment is text for a comment, which ends at the line's end: a line
// break in it is a bug of the program.
func stepComment(text string) string {
	if strings.ContainsAny(text, "\r\n") {
		panic(fmt.Sprintf("comment: %q is more than one line", text))
	}
	return text
}
