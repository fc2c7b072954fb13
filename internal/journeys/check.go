// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package journeys

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Find returns the block of page marked `journey id`.
func Find(blocks []Block, page, id string) (Block, error) {
	for _, b := range blocks {
		if b.Page == page && b.Marker != nil && b.Marker.ID == id {
			return b, nil
		}
	}
	return Block{}, fmt.Errorf("%s has no command block marked `<!-- journey %s: ... -->`", page, id)
}

// placeholderRE is a placeholder left in a command: <node name>, <id>.
var placeholderRE = regexp.MustCompile(`<[A-Za-z][A-Za-z0-9 '._-]*>`)

// Script is the block's text with subs (old, new, old, new, ...) replaced,
// as strings.Replacer does: at each place the first pair that matches.
// Each old must occur in the block, so a table cannot outlive the text it
// was written for, and no <placeholder> may be left.
func Script(b Block, subs ...string) (string, error) {
	if len(subs)%2 != 0 {
		return "", fmt.Errorf("%s: substitutions come in pairs (old, new), got %d strings", b, len(subs))
	}
	var problems []string
	for i := 0; i < len(subs); i += 2 {
		if subs[i] == "" || !strings.Contains(b.Text, subs[i]) {
			problems = append(problems, fmt.Sprintf("%q does not occur in it", subs[i]))
		}
	}
	s := strings.NewReplacer(subs...).Replace(b.Text)
	for _, p := range placeholderRE.FindAllString(s, -1) {
		problems = append(problems, fmt.Sprintf("the placeholder %s is left: substitute it", p))
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("%s: %s", b, strings.Join(problems, "; "))
	}
	return s, nil
}

// Command runs script as a user who pastes the block into bash would,
// stopping at the first command that fails (and at a failure anywhere in
// a pipeline). The caller sets its Dir and Env.
func Command(ctx context.Context, script string) *exec.Cmd {
	return exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
}

// Summary is what Check counted.
type Summary struct {
	RunCommands, MarkedCommands int // commands of the blocks run, of the blocks marked not run
	RunBlocks, MarkedBlocks     int
	Uncovered                   []Block // blocks marked not run whose parts no test covers
}

// Line is the line make ci prints.
func (s Summary) Line() string {
	return fmt.Sprintf("journeys: %d commands run, %d marked", s.RunCommands, s.MarkedCommands)
}

// Check accounts for every command block against the ledger of this run:
// a block marked run must have been recorded by a test its marker names;
// a block with no marker, or a record of a block not marked run, is a
// problem.
func Check(blocks []Block, ledger []Entry) (Summary, []string) {
	var s Summary
	var problems []string
	ran := map[string][]string{} // page#id -> tests that recorded it
	for _, e := range ledger {
		k := e.Page + "#" + e.ID
		ran[k] = append(ran[k], e.Test)
	}
	runBlocks := map[string]bool{}
	for _, b := range blocks {
		switch {
		case b.Marker == nil:
			first, _, _ := strings.Cut(strings.TrimSpace(b.Text), "\n")
			problems = append(problems, fmt.Sprintf("%s: a command block with no journey marker (%q): run it as written from a test (harness.RunJourney) and mark it <!-- journey ID: run by TestName -->, or say why it cannot run here: <!-- journey ID: not run: WHY; covered by TestName -->", b, first))
		case b.Marker.Run:
			k := b.Page + "#" + b.Marker.ID
			runBlocks[k] = true
			tests := ran[k]
			if len(tests) == 0 {
				problems = append(problems, fmt.Sprintf("%s: marked run by %s, but no test recorded running it as written and passing in this run (the ledger): did %s run and pass?", b, strings.Join(b.Marker.Tests, ", "), strings.Join(b.Marker.Tests, " or ")))
				continue
			}
			for _, t := range tests {
				top, _, _ := strings.Cut(t, "/")
				if !slices.Contains(b.Marker.Tests, top) {
					problems = append(problems, fmt.Sprintf("%s: run by %s, which its marker does not name (run by %s)", b, t, strings.Join(b.Marker.Tests, ", ")))
				}
			}
			s.RunBlocks++
			s.RunCommands += b.Commands()
		default:
			s.MarkedBlocks++
			s.MarkedCommands += b.Commands()
			if len(b.Marker.Tests) == 0 && len(b.Marker.Targets) == 0 {
				s.Uncovered = append(s.Uncovered, b)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ran)) {
		if !runBlocks[k] {
			problems = append(problems, fmt.Sprintf("the ledger says %s ran %s, which is no command block marked run by a test", strings.Join(ran[k], ", "), k))
		}
	}
	return s, problems
}

// Names checks that every test and make target a marker names exists:
// a func TestName in a _test.go file under root, a rule of root's
// GNUmakefile.
func Names(root string, blocks []Block) ([]string, error) {
	tests := map[string]bool{}
	funcRE := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range funcRE.FindAllStringSubmatch(string(data), -1) {
			tests[m[1]] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	mk, err := os.ReadFile(filepath.Join(root, "GNUmakefile"))
	if err != nil {
		return nil, err
	}
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z0-9-]+):`).FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	var problems []string
	for _, b := range blocks {
		if b.Marker == nil {
			continue
		}
		for _, t := range b.Marker.Tests {
			if !tests[t] {
				problems = append(problems, fmt.Sprintf("%s: the marker names %s, which no _test.go file defines", b, t))
			}
		}
		for _, t := range b.Marker.Targets {
			if !targets[t] {
				problems = append(problems, fmt.Sprintf("%s: the marker names make %s, which GNUmakefile does not define", b, t))
			}
		}
	}
	return problems, nil
}
