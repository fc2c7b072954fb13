// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The install story: the plugin is not released, so every page and every
// example header that tells the user to run `packer build` (or `packer
// validate`) first tells them to run a make target that installs the
// plugin into packer (`make dev`, which runs `packer plugins install
// --path`), and none tells them to run `packer init` or `packer plugins
// install github.com/kubenode/kubenode` as if a release existed. Prose may
// say that `packer init` will work once a release is published: only
// command lines are checked (fenced or indented code in Markdown, comment
// lines indented by two or more spaces in an example's header).

// makeRule is one rule of the GNUmakefile: its prerequisites and recipe.
type makeRule struct {
	prereqs []string
	recipe  []string
	help    bool   // has a `## ` description, which `make help` lists
	text    string // that description
}

var makeRuleLine = regexp.MustCompile(`^([A-Za-z0-9_.-]+):([^=].*|)$`)

// parseMakefile reads GNUmakefile's explicit rules.
func parseMakefile(t *testing.T, text string) map[string]*makeRule {
	t.Helper()
	rules := map[string]*makeRule{}
	var cur *makeRule
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "\t") {
			if cur != nil {
				cur.recipe = append(cur.recipe, line)
			}
			continue
		}
		cur = nil
		m := makeRuleLine.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(m[1], ".") {
			continue
		}
		deps, desc, _ := strings.Cut(m[2], "#")
		text, help := strings.CutPrefix(desc, "# ")
		cur = &makeRule{prereqs: strings.Fields(deps), help: help, text: strings.TrimSpace(text)}
		rules[m[1]] = cur
	}
	require.NotEmpty(t, rules, "GNUmakefile: no rules found")
	return rules
}

// pluginInstall is a recipe line that installs a plugin into packer, the
// packer on PATH or one named by a variable ("$$packer" plugins install).
var pluginInstall = regexp.MustCompile(`\bpacker"? plugins install\b`)

// installsPlugin says whether `make target` installs the plugin into
// packer: its recipe, or a prerequisite's (transitively, less those made
// old with -o), runs `packer plugins install`.
func installsPlugin(rules map[string]*makeRule, target string, old map[string]bool) bool {
	seen := map[string]bool{}
	var visit func(string) bool
	visit = func(t string) bool {
		r, ok := rules[t]
		if !ok || seen[t] || old[t] {
			return false
		}
		seen[t] = true
		for _, l := range r.recipe {
			if pluginInstall.MatchString(l) {
				return true
			}
		}
		for _, p := range r.prereqs {
			if visit(p) {
				return true
			}
		}
		return false
	}
	return visit(target)
}

// command is one shell command a document tells the user to run, with its
// continuation lines joined.
type command struct {
	line int
	text string
}

// markdownCommands returns the command lines of a Markdown page: the lines
// of fenced code blocks and of blocks indented by four spaces.
func markdownCommands(text string) []command {
	var lines []command
	fenced := false
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			fenced = !fenced
			continue
		}
		if fenced || strings.HasPrefix(l, "    ") {
			lines = append(lines, command{i + 1, trimmed})
		}
	}
	return joinContinuations(lines)
}

// headerCommands returns the command lines of an example's header: its
// leading comment lines whose text is indented by two spaces or more.
func headerCommands(text string) []command {
	var lines []command
	indented := regexp.MustCompile(`^#\s{2,}(\S.*)$`)
	for i, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		if m := indented.FindStringSubmatch(l); m != nil {
			lines = append(lines, command{i + 1, strings.TrimSpace(m[1])})
		}
	}
	return joinContinuations(lines)
}

func joinContinuations(lines []command) []command {
	var out []command
	cont := false
	for _, l := range lines {
		if cont {
			out[len(out)-1].text += " " + strings.TrimSuffix(l.text, "\\")
		} else {
			out = append(out, command{l.line, strings.TrimSuffix(l.text, "\\")})
		}
		cont = strings.HasSuffix(l.text, "\\")
	}
	return out
}

var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// words splits a command into words up to its end (a comment, &&, ;, |),
// with `sudo`, `env` and environment assignments in front dropped and
// "$(command -v packer)" read as packer.
func words(cmd string) []string {
	cmd = strings.NewReplacer(`"$(command -v packer)"`, "packer", `$(command -v packer)`, "packer").Replace(cmd)
	var out []string
	prefix := true
	for _, w := range strings.Fields(cmd) {
		if w == "#" || strings.HasPrefix(w, "#") || w == "&&" || w == "||" || w == ";" || w == "|" {
			break
		}
		if prefix && (w == "sudo" || w == "env" || envAssignment.MatchString(w)) {
			continue
		}
		prefix = false
		out = append(out, w)
	}
	return out
}

// makeTargets returns the targets a `make` command names and the targets
// it makes old (-o), or ok=false when the command is not make.
func makeTargets(w []string) (targets []string, old map[string]bool, ok bool) {
	if len(w) == 0 || filepath.Base(w[0]) != "make" {
		return nil, nil, false
	}
	old = map[string]bool{}
	for i := 1; i < len(w); i++ {
		switch a := w[i]; {
		case a == "-o" || a == "--assume-old" || a == "-W" || a == "-C" || a == "-f" || a == "-j":
			if a == "-o" || a == "--assume-old" {
				if i+1 < len(w) {
					old[w[i+1]] = true
				}
			}
			i++
		case strings.HasPrefix(a, "--assume-old="):
			old[strings.TrimPrefix(a, "--assume-old=")] = true
		case strings.HasPrefix(a, "-") || envAssignment.MatchString(a):
		default:
			targets = append(targets, a)
		}
	}
	return targets, old, true
}

// packerSub returns packer's subcommand words ("build", "plugins install",
// ...) or "" when the command is not packer.
func packerSub(w []string) string {
	if len(w) < 2 || filepath.Base(w[0]) != "packer" {
		return ""
	}
	if w[1] == "plugins" && len(w) > 2 {
		return "plugins " + w[2]
	}
	return w[1]
}

// checkInstallStory returns what is wrong with one document's commands.
func checkInstallStory(rules map[string]*makeRule, name string, cmds []command) []string {
	var problems []string
	installed := false // the nearest make (or plugin install) before installs the plugin
	seenMake := ""
	for _, c := range cmds {
		w := words(c.text)
		if targets, old, ok := makeTargets(w); ok {
			seenMake = c.text
			installed = false
			for _, t := range targets {
				if installsPlugin(rules, t, old) {
					installed = true
				}
			}
			continue
		}
		switch sub := packerSub(w); sub {
		case "init":
			problems = append(problems, name+":"+strconv.Itoa(c.line)+": `packer init` cannot fetch the unreleased plugin: `make dev` installs it ("+c.text+")")
		case "plugins install":
			if !strings.Contains(c.text, "--path") {
				problems = append(problems, name+":"+strconv.Itoa(c.line)+": `packer plugins install` without --path fetches a release that does not exist: `make dev` installs the plugin ("+c.text+")")
			} else {
				installed, seenMake = true, c.text
			}
		case "build", "validate":
			if installed {
				continue
			}
			why := "no make command before it"
			if seenMake != "" {
				why = "the make command before it (" + seenMake + ") installs no plugin"
			}
			problems = append(problems, name+":"+strconv.Itoa(c.line)+": `packer "+sub+"` but "+why+": tell the user `make dev` (a target whose recipe runs `packer plugins install`) first")
		}
	}
	return problems
}

func readMakefile(t *testing.T) map[string]*makeRule {
	t.Helper()
	b, err := os.ReadFile("GNUmakefile")
	require.NoError(t, err)
	return parseMakefile(t, string(b))
}

// TestInstallStoryInstallsThePluginFirst: every example header and every
// page that shows `packer build` or `packer validate` shows a make command
// that installs the plugin before it, and none shows `packer init` or
// `packer plugins install` without --path.
func TestInstallStoryInstallsThePluginFirst(t *testing.T) {
	rules := readMakefile(t)
	var installers []string
	for name := range rules {
		if installsPlugin(rules, name, nil) {
			installers = append(installers, name)
		}
	}
	require.Contains(t, installers, "dev", "GNUmakefile: `make dev` installs the plugin (packer plugins install)")

	examples, err := filepath.Glob("examples/*.pkr.hcl")
	require.NoError(t, err)
	require.NotEmpty(t, examples)
	builds := 0
	for _, path := range examples {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		cmds := headerCommands(string(b))
		for _, c := range cmds {
			if s := packerSub(words(c.text)); s == "build" {
				builds++
			}
		}
		assert.Empty(t, checkInstallStory(rules, path, cmds), "%s: its header's install steps (targets that install the plugin: %v)", path, installers)
	}
	assert.NotZero(t, builds, "no example header shows `packer build`: the check reads nothing")

	docs, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	for _, path := range append([]string{"README.md"}, docs...) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Empty(t, checkInstallStory(rules, path, markdownCommands(string(b))), "%s: install steps (targets that install the plugin: %v)", path, installers)
	}
}

// TestInstallStoryCheckCanFail: the check above finds what it is for.
func TestInstallStoryCheckCanFail(t *testing.T) {
	rules := readMakefile(t)
	header := func(lines ...string) []command {
		return headerCommands(strings.Join(lines, "\n") + "\nsource \"x\" \"y\" {}\n")
	}

	assert.Empty(t, checkInstallStory(rules, "ok", header("# An image.", "#", "#   make dev joiner   # installs", "#   packer build \\", "#     x.pkr.hcl")))
	assert.Empty(t, checkInstallStory(rules, "ok", header("#   make -o setup dev joiner", `#   sudo env PACKER_PLUGIN_PATH="$P" "$(command -v packer)" build x.pkr.hcl`)))
	assert.Empty(t, checkInstallStory(rules, "ok", header("#   make debian-image")), "debian-image installs through dev")

	for what, h := range map[string][]command{
		"a make without the plugin":  header("#   make setup joiner", "#   packer build x.pkr.hcl"),
		"no make at all":             header("#   packer build x.pkr.hcl"),
		"packer init":                header("#   make dev", "#   packer init x.pkr.hcl", "#   packer build x.pkr.hcl"),
		"install without --path":     header("#   packer plugins install github.com/kubenode/kubenode"),
		"sudo root's packer":         header("#   make build joiner", `#   sudo env X=1 "$(command -v packer)" build x.pkr.hcl`),
		"make lab is not an install": header("#   make dev", "#   make lab", "#   packer validate x.pkr.hcl"),
	} {
		assert.NotEmpty(t, checkInstallStory(rules, "bad", h), what)
	}

	md := "Once released, `packer init` will fetch it.\n\n```sh\nmake build\npacker build x.pkr.hcl\n```\n"
	assert.Len(t, checkInstallStory(rules, "bad.md", markdownCommands(md)), 1, "prose passes, the code block does not")
	assert.Empty(t, checkInstallStory(rules, "ok.md", markdownCommands("    make dev joiner && eval \"$(scripts/setup.sh env)\"\n    packer build x.pkr.hcl\n")))
}

// TestMakeHelpListMatchesTheMakefile: CONTRIBUTING.md's list of what `make
// help` prints names exactly the GNUmakefile's targets with a `## `
// description.
func TestMakeHelpListMatchesTheMakefile(t *testing.T) {
	rules := readMakefile(t)
	var want []string
	for name, r := range rules {
		if r.help {
			want = append(want, name)
		}
	}
	sort.Strings(want)
	require.Contains(t, want, "help")

	b, err := os.ReadFile("CONTRIBUTING.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(b), "`make help` lists them:")
	require.True(t, ok, "CONTRIBUTING.md: the sentence \"`make help` lists them:\" and the list")
	list, _, _ := strings.Cut(after, "\n\n")
	var got []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(list, -1) {
		got = append(got, m[1])
	}
	sort.Strings(got)
	assert.Equal(t, want, got, "CONTRIBUTING.md's `make help` list against GNUmakefile's targets with ## descriptions")
}
