// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A docs page that names a golden file or a testdata path must name one
// that exists: a renamed or renumbered golden (the bake's step scripts are
// numbered in run order, and the numbers differ between cases) otherwise
// leaves the page pointing at nothing.
//
// What the pages call a golden, and is checked:
//   - a backticked path with a testdata/ component
//     (`builder/libvirt/testdata/domain-windows-2022-uefi.xml`,
//     `cmd/joiner/join/testdata/kubeadm-join-*.yaml`): it must exist, as
//     written from the repository root or as the end of a path in it;
//   - a backticked file name ending in .golden, or a numbered step script
//     (`04-containerd.ps1`): some file under a testdata directory must end
//     with it;
//   - a backticked file name with a golden file's extension in a table cell
//     or paragraph that says "golden", or anywhere in a section whose
//     heading says "golden": the same;
//   - a relative path whose first directory is one that testdata holds
//     (`2019-config-v2/01-containers-feature.ps1`,
//     `first-boot/SetupComplete.cmd`): the same.
//
// Left alone, so that upstream files and guest paths named beside goldens
// do not count: absolute paths, paths with a backslash or a drive, names
// with spaces, and relative paths whose first directory is not one of
// testdata's (`templates/StartKubelet.ps1` in image-builder).

var (
	docsBacktick  = regexp.MustCompile("`([^`\n]+)`")
	docsNumbered  = regexp.MustCompile(`^\d{2}-[A-Za-z0-9-]+\.(ps1|sh|cmd)$`)
	docsGoldenExt = regexp.MustCompile(`\.(golden|ps1|xml|cmd|toml|ya?ml|sh|conf|cfg)$`)
	// "golden", "goldens", "golden files", not "golden-tested".
	docsGoldenWord  = regexp.MustCompile(`(?i)\bgoldens?([^-\w]|$)`)
	docsClauseEnd   = regexp.MustCompile(`[.;:]\s`)
	docsFileNameish = regexp.MustCompile(`^[A-Za-z0-9_.*/-]+$`)
)

// testdataFiles lists every file and directory under a testdata directory
// of the repository, slash-separated from the root, and the names of the
// directories inside those testdata trees.
func testdataFiles(t *testing.T) (files []string, dirs map[string]bool) {
	t.Helper()
	dirs = map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		p = filepath.ToSlash(p)
		in := strings.Contains("/"+p+"/", "/testdata/")
		if !in {
			return nil
		}
		if d.IsDir() {
			if d.Name() != "testdata" {
				dirs[d.Name()] = true
			}
			files = append(files, p+"/")
			return nil
		}
		files = append(files, p)
		return nil
	})
	require.NoError(t, err)
	sort.Strings(files)
	return files, dirs
}

// docsGoldenRef is one name a page gives a golden file.
type docsGoldenRef struct {
	page, name string
	line       int
}

// goldenRefs returns the golden names in one page's text.
func goldenRefs(page, text string, testdataDirs map[string]bool) []docsGoldenRef {
	var out []docsGoldenRef
	// scan looks at one table cell or paragraph, whose first line is line.
	scan := func(unit string, line int, goldenSection bool) {
		// The clause a name is in must say "golden" (unless the section
		// does): clauses end at ". ", "; " and ": ".
		start := 0
		var bounds [][2]int
		for _, sep := range docsClauseEnd.FindAllStringIndex(unit, -1) {
			bounds = append(bounds, [2]int{start, sep[0]})
			start = sep[1]
		}
		bounds = append(bounds, [2]int{start, len(unit)})
		for _, bd := range bounds {
			clause := unit[bd[0]:bd[1]]
			golden := goldenSection || docsGoldenWord.MatchString(clause)
			for _, m := range docsBacktick.FindAllStringSubmatchIndex(clause, -1) {
				name := strings.TrimSpace(clause[m[2]:m[3]])
				if !docsFileNameish.MatchString(name) || strings.HasPrefix(name, "/") {
					continue // a guest path, a command, a sentence
				}
				base := path.Base(name)
				first, _, nested := strings.Cut(name, "/")
				switch {
				case strings.Contains("/"+name, "/testdata/"):
				case !nested && (strings.HasSuffix(name, ".golden") || docsNumbered.MatchString(name)):
				case golden && docsGoldenExt.MatchString(base) && (!nested || testdataDirs[first]):
				default:
					continue
				}
				n := line + strings.Count(unit[:bd[0]+m[2]], "\n")
				out = append(out, docsGoldenRef{page: page, name: name, line: n})
			}
		}
	}
	lines := strings.Split(text, "\n")
	goldenSection, inFence := false, false
	for i := 0; i < len(lines); {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			inFence = !inFence
			i++
		case inFence || trimmed == "":
			i++
		case strings.HasPrefix(line, "#"):
			goldenSection = docsGoldenWord.MatchString(line)
			i++
		case strings.HasPrefix(line, "|"):
			for _, cell := range strings.Split(line, "|") {
				scan(cell, i+1, goldenSection)
			}
			i++
		default:
			// A paragraph or a list item: blank lines, tables, headings,
			// fences and the next list item end it.
			j := i + 1
			for j < len(lines) {
				next := strings.TrimSpace(lines[j])
				if next == "" || strings.HasPrefix(next, "- ") || strings.HasPrefix(lines[j], "|") ||
					strings.HasPrefix(lines[j], "#") || strings.HasPrefix(next, "```") {
					break
				}
				j++
			}
			scan(strings.Join(lines[i:j], "\n"), i+1, goldenSection)
			i = j
		}
	}
	return out
}

// goldenExists says whether name is a path under testdata, as written from
// the root or as the end of one, with * matching within a path segment.
func goldenExists(name string, files []string) bool {
	for _, f := range files {
		for _, cand := range []string{f, strings.TrimSuffix(f, "/")} {
			if ok, _ := path.Match(name, cand); ok {
				return true
			}
			if strings.Contains(cand, "/") {
				tail := cand
				for {
					_, rest, found := strings.Cut(tail, "/")
					if !found {
						break
					}
					if ok, _ := path.Match(name, rest); ok {
						return true
					}
					tail = rest
				}
			}
		}
	}
	return false
}

func checkGoldenRefs(t *testing.T, pages map[string]string) []docsGoldenRef {
	t.Helper()
	files, dirs := testdataFiles(t)
	require.NotEmpty(t, files, "no testdata found: run the test from the repository root")
	var missing []docsGoldenRef
	for _, page := range sortedKeys(pages) {
		for _, ref := range goldenRefs(page, pages[page], dirs) {
			if !goldenExists(ref.name, files) {
				missing = append(missing, ref)
			}
		}
	}
	return missing
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestDocsNameOnlyGoldenFilesThatExist: every golden file or testdata path
// a page in docs/ names is in the repository.
func TestDocsNameOnlyGoldenFilesThatExist(t *testing.T) {
	paths, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	pages := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		pages[p] = string(b)
	}
	for _, ref := range checkGoldenRefs(t, pages) {
		t.Errorf("%s:%d names `%s`, which is no file under a testdata directory (renamed or renumbered? find . -path '*/testdata/*')", ref.page, ref.line, ref.name)
	}
}

// TestDocsGoldenCheckCanFail: the matcher finds a golden that does not
// exist in each way a page names one, and leaves alone what is not a
// golden.
func TestDocsGoldenCheckCanFail(t *testing.T) {
	page := strings.Join([]string{
		"## Golden files",
		"",
		"- `windows-2019-bios-core.xml`, `windows-2031-bios-core.xml`: answer files.",
		"",
		"## Facts",
		"",
		"| fact | source | pinned by |",
		"| --- | --- | --- |",
		"| a | image-builder `templates/StartKubelet.ps1`; rgl `provision-winrm.ps1` | `06-defender.ps1` goldens |",
		"| b | `C:\\k\\StartKubelet.ps1` | `sysprep.ps1` |",
		"",
		"The `2019-config-v2/04-containerd.ps1` and `2019-config-v2/05-containerd.ps1` goldens,",
		"`builder/libvirt/testdata/domain-windows-2022-uefi.xml`, `builder/libvirt/testdata/domain-windows-2099.xml`,",
		"`cmd/lab/capirender/testdata/worker-user-data.golden`, `nothing-like-it.golden`, `99-nowhere.ps1`.",
		"",
		"```",
		"`77-in-a-fence.ps1`",
		"```",
		"",
		"An upstream `enable-winrm.ps1` in a paragraph about something else; `/etc/kubenode/joiner.yaml`.",
	}, "\n")
	var got []string
	for _, ref := range checkGoldenRefs(t, map[string]string{"page.md": page}) {
		got = append(got, ref.name)
	}
	assert.ElementsMatch(t, []string{
		"windows-2031-bios-core.xml",                       // a golden section's list
		"06-defender.ps1",                                  // a numbered step that no case has
		"2019-config-v2/05-containerd.ps1",                 // a case's step under another case's number
		"builder/libvirt/testdata/domain-windows-2099.xml", // a testdata path
		"nothing-like-it.golden",
		"99-nowhere.ps1",
	}, got)
}
