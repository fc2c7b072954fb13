// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package journeys finds the commands the user documentation tells a user
// to run (README.md and docs/*.md) and holds each to account: a test runs
// it as written, or the page says, in a comment readers do not see, why it
// cannot run here and which tests cover its parts.
//
// A command block is a fenced code block whose info string is empty or a
// shell's (sh, bash, shell, console, powershell, ...), or an indented code
// block. Any other info string (text for output, hcl, yaml, go, ...) says
// the block is not a command. The HTML comment right before a command
// block is its marker, in one of two forms:
//
//	<!-- journey ID: run by TestName -->
//	<!-- journey ID: not run: WHY; covered by TestName, make target, ... -->
//
// ID is unique on its page; a test finds the block by page and ID
// (harness.RunJourney), runs it with the placeholders its table names
// substituted, and records it in the ledger (ledger.go) when the test
// passes. "covered by" names the tests (or make targets) that run the
// block's parts, or says "no test" and why.
package journeys

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// Block is one command block of a page.
type Block struct {
	Page   string // slash path from the repository root: README.md, docs/lab.md
	Line   int    // the line of its first command
	Lang   string // the fenced block's language; "" for none or an indented block
	Text   string // its lines, without the indentation of an indented block
	Marker *Marker
}

// Marker is the journey comment right before a command block.
type Marker struct {
	ID      string
	Run     bool     // run as written by Tests
	Why     string   // not run: why it cannot run here
	Covered string   // not run: what covers its parts, as written
	Tests   []string // the tests it names (run by, or covered by)
	Targets []string // the make targets it names (covered by)
	Line    int
}

// String names the block for messages: page:line (id).
func (b Block) String() string {
	if b.Marker == nil {
		return fmt.Sprintf("%s:%d", b.Page, b.Line)
	}
	return fmt.Sprintf("%s:%d (journey %s)", b.Page, b.Line, b.Marker.ID)
}

// Commands counts the commands of the block: its lines but blank and
// comment lines, a line continued with a trailing backslash counting once.
func (b Block) Commands() int {
	n, continued := 0, false
	for _, l := range strings.Split(b.Text, "\n") {
		l = strings.TrimSpace(l)
		wasContinued := continued
		continued = strings.HasSuffix(l, `\`)
		if wasContinued || l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		n++
	}
	return n
}

// shells are the info strings of command blocks.
var shells = []string{"", "sh", "bash", "shell", "console", "powershell", "pwsh", "ps1", "bat", "cmd"}

// Pages are the user documentation: README.md and docs/*.md.
func Pages(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	pages := []string{"README.md"}
	for _, d := range docs {
		pages = append(pages, "docs/"+filepath.Base(d))
	}
	slices.Sort(pages[1:])
	return pages, nil
}

// Load extracts the command blocks of every page under root. Problems
// with the markers are returned together, each naming its page and line.
func Load(root string) ([]Block, error) {
	pages, err := Pages(root)
	if err != nil {
		return nil, err
	}
	var blocks []Block
	var problems []string
	for _, p := range pages {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		b, probs := Extract(p, src)
		blocks = append(blocks, b...)
		problems = append(problems, probs...)
	}
	if len(problems) > 0 {
		return blocks, &Problems{List: problems}
	}
	return blocks, nil
}

// Problems are every problem a check found.
type Problems struct{ List []string }

func (p *Problems) Error() string {
	return fmt.Sprintf("%d problem(s):\n  %s", len(p.List), strings.Join(p.List, "\n  "))
}

// Extract returns the command blocks of one page, and the problems of its
// markers: one that does not parse, one that stands before no command
// block, an ID used twice.
func Extract(page string, src []byte) ([]Block, []string) {
	doc := goldmark.DefaultParser().Parse(text.NewReader(src))
	var blocks []Block
	var problems []string
	parsed := 0 // markers found as HTML blocks
	ids := map[string]int{}
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if h, ok := n.(*ast.HTMLBlock); ok {
			if m, ok := markerText(h, src); ok {
				parsed++
				if _, isCommand := commandBlock(n.NextSibling(), src); !isCommand {
					problems = append(problems, fmt.Sprintf("%s:%d: the journey marker stands before no command block (a fenced block with no info string or a shell's, or an indented block) right after it: %s", page, lineOf(src, h.Lines().At(0).Start), m))
				}
			}
			return ast.WalkSkipChildren, nil
		}
		b, ok := commandBlock(n, src)
		if !ok {
			return ast.WalkContinue, nil
		}
		b.Page = page
		if h, ok := n.PreviousSibling().(*ast.HTMLBlock); ok {
			if m, ok := markerText(h, src); ok {
				line := lineOf(src, h.Lines().At(0).Start)
				mk, err := ParseMarker(m)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: %v", page, line, err))
				} else {
					mk.Line = line
					b.Marker = mk
					if first, dup := ids[mk.ID]; dup {
						problems = append(problems, fmt.Sprintf("%s:%d: journey %s is also the ID of the block at line %d: IDs are unique on a page", page, line, mk.ID, first))
					}
					ids[mk.ID] = line
				}
			}
		}
		blocks = append(blocks, b)
		return ast.WalkSkipChildren, nil
	})
	// A marker inside a paragraph or a list item's text is no HTML block
	// of its own and marks nothing.
	if all := len(markerStart.FindAllIndex(src, -1)); all != parsed {
		problems = append(problems, fmt.Sprintf("%s: %d journey marker(s) are not HTML blocks of their own (a comment on a line of its own, right before its code block): they mark nothing", page, all-parsed))
	}
	return blocks, problems
}

var markerStart = regexp.MustCompile(`<!--\s*journey\b`)

// commandBlock turns a fenced or indented code block that holds commands
// into a Block.
func commandBlock(n ast.Node, src []byte) (Block, bool) {
	var lang string
	switch c := n.(type) {
	case *ast.FencedCodeBlock:
		lang = string(c.Language(src))
		if !slices.Contains(shells, strings.ToLower(lang)) {
			return Block{}, false
		}
	case *ast.CodeBlock:
	default:
		return Block{}, false
	}
	lines := n.Lines()
	var buf bytes.Buffer
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		buf.WriteString(strings.Repeat(" ", seg.Padding))
		buf.Write(seg.Value(src))
	}
	line := 0
	if lines.Len() > 0 {
		line = lineOf(src, lines.At(0).Start)
	}
	return Block{Line: line, Lang: lang, Text: strings.TrimRight(buf.String(), "\n")}, true
}

// markerText returns the journey comment an HTML block holds, its
// whitespace folded to single spaces.
func markerText(h *ast.HTMLBlock, src []byte) (string, bool) {
	if h.HTMLBlockType != ast.HTMLBlockType2 {
		return "", false
	}
	var buf bytes.Buffer
	lines := h.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		buf.Write(seg.Value(src))
	}
	if h.HasClosure() {
		buf.Write(h.ClosureLine.Value(src))
	}
	s := strings.Join(strings.Fields(buf.String()), " ")
	if !strings.HasPrefix(s, "<!-- journey") {
		return "", false
	}
	return s, true
}

func lineOf(src []byte, offset int) int {
	return bytes.Count(src[:offset], []byte("\n")) + 1
}

var (
	markerRE = regexp.MustCompile(`^<!-- journey ([a-z0-9][a-z0-9-]*): (.*) -->$`)
	testRE   = regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`)
	targetRE = regexp.MustCompile("\\bmake ([a-z0-9-]+)")
)

// The marker forms, for messages.
const markerForms = "<!-- journey ID: run by TestName --> or <!-- journey ID: not run: WHY; covered by TestName, make target, ... (or: covered by no test: WHY) -->"

// ParseMarker reads a journey comment (whitespace folded).
func ParseMarker(s string) (*Marker, error) {
	m := markerRE.FindStringSubmatch(s)
	if m == nil {
		return nil, fmt.Errorf("journey marker %q: want %s, ID of lowercase letters, digits and dashes", s, markerForms)
	}
	mk := &Marker{ID: m[1]}
	body := m[2]
	if by, ok := strings.CutPrefix(body, "run by "); ok {
		mk.Run = true
		mk.Tests = testRE.FindAllString(by, -1)
		if len(mk.Tests) == 0 {
			return nil, fmt.Errorf("journey %s: %q names no test (TestName) that runs the block", mk.ID, by)
		}
		return mk, nil
	}
	rest, ok := strings.CutPrefix(body, "not run: ")
	if !ok {
		return nil, fmt.Errorf("journey %s: %q is neither \"run by ...\" nor \"not run: ...\": want %s", mk.ID, body, markerForms)
	}
	i := strings.LastIndex(rest, "; covered by ")
	if i < 0 {
		return nil, fmt.Errorf("journey %s: %q says why it is not run but not what covers its parts: end it with \"; covered by TestName, make target, ...\" (or \"; covered by no test: WHY\")", mk.ID, rest)
	}
	mk.Why, mk.Covered = strings.TrimSpace(rest[:i]), strings.TrimSpace(rest[i+len("; covered by "):])
	if mk.Why == "" {
		return nil, fmt.Errorf("journey %s: not run, but the marker does not say why", mk.ID)
	}
	if strings.HasPrefix(mk.Covered, "no test: ") {
		return mk, nil
	}
	mk.Tests = testRE.FindAllString(mk.Covered, -1)
	for _, t := range targetRE.FindAllStringSubmatch(mk.Covered, -1) {
		mk.Targets = append(mk.Targets, t[1])
	}
	if len(mk.Tests) == 0 && len(mk.Targets) == 0 {
		return nil, fmt.Errorf("journey %s: \"covered by %s\" names no test (TestName) and no make target; if none covers it, say \"covered by no test: WHY\"", mk.ID, mk.Covered)
	}
	return mk, nil
}
