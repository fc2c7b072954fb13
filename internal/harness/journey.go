// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/journeys"
)

// Journey is a command block of the user documentation to run as written
// (internal/journeys): the block of Page marked `<!-- journey ID: run by
// TestName -->`, with the placeholders Subs names substituted.
type Journey struct {
	Page, ID string
	// Subs is the block's table of placeholders, as old, new pairs: the
	// paths, names and addresses that are the reader's own (admin.conf,
	// <node name>, 192.168.150.1:6443) and what this test has instead.
	// Each old must occur in the block.
	Subs []string
	Dir  string        // where it runs; default the repository root
	Env  []string      // its environment; default the test's; make's MAKEFLAGS, MAKELEVEL, ... never
	Wait time.Duration // how long it may take; default 30 minutes (a cold make joiner compiles the joiner for Windows)
}

// RunJourney runs the block as a reader pasting it into bash would, and
// returns its output and exit error; the test judges them. When the test
// (or subtest) t passes, the block is recorded as run in the ledger of
// this make ci run ($CI_REPORT/journeys.ledger), which `make journeys`
// checks.
func RunJourney(t testing.TB, j Journey) (string, error) {
	t.Helper()
	blocks, err := journeys.Load(Root())
	if err != nil {
		t.Fatalf("the documentation's command blocks: %v", err)
	}
	b, err := journeys.Find(blocks, j.Page, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Marker.Run || !slices.Contains(b.Marker.Tests, topName(t.Name())) {
		t.Fatalf("%s: its marker says %q, not run by %s: mark it <!-- journey %s: run by %s -->", b, markerSays(b.Marker), topName(t.Name()), j.ID, topName(t.Name()))
	}
	script, err := journeys.Script(b, j.Subs...)
	if err != nil {
		t.Fatal(err)
	}
	if j.Dir == "" {
		j.Dir = Root()
	}
	if j.Wait == 0 {
		j.Wait = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.Wait)
	defer cancel()
	cmd := journeys.Command(ctx, script)
	cmd.Dir = j.Dir
	if j.Env == nil {
		j.Env = os.Environ()
	}
	// A reader's shell, not a recipe of make integration's: make's
	// variables for its sub-makes would steer a make the block runs.
	for _, kv := range j.Env {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains([]string{"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"}, name) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("%s, as run (exit: %v):\n%s\n--- its output:\n%s", b, err, script, out.String())
	if ledger := journeys.LedgerPath(); ledger != "" {
		name := t.Name()
		t.Cleanup(func() {
			if t.Failed() {
				return
			}
			if err := journeys.Record(ledger, journeys.Entry{Page: j.Page, ID: j.ID, Test: name}); err != nil {
				t.Errorf("recording %s in the journeys ledger: %v", b, err)
			}
		})
	}
	return out.String(), err
}

func topName(name string) string {
	top, _, _ := strings.Cut(name, "/")
	return top
}

func markerSays(m *journeys.Marker) string {
	if m.Run {
		return "run by " + strings.Join(m.Tests, ", ")
	}
	return "not run: " + m.Why
}
