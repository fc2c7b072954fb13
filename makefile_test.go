// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// makefilePhony reads GNUmakefile's .PHONY targets.
func makefilePhony(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("GNUmakefile")
	require.NoError(t, err)
	var phony []string
	for line := range strings.Lines(string(b)) {
		if names, ok := strings.CutPrefix(line, ".PHONY:"); ok {
			phony = append(phony, strings.Fields(names)...)
		}
	}
	require.NotEmpty(t, phony, "GNUmakefile declares its targets in .PHONY")
	return phony
}

// TestMakeHelpListsEveryTarget: `make help` is how a user finds the
// targets, so every .PHONY target carries a `## ` comment and appears in
// its output with that text, whatever characters its name has (e2e-capi).
func TestMakeHelpListsEveryTarget(t *testing.T) {
	phony, rules := makefilePhony(t), readMakefile(t)
	help := map[string]string{}
	for name, r := range rules {
		if r.help {
			help[name] = r.text
		}
	}
	for _, target := range phony {
		assert.NotEmpty(t, help[target], "GNUmakefile: target %s has no `## ` help comment on its rule line", target)
	}

	cmd := exec.Command("make", "--no-print-directory", "-s", "help")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make help: %s (install make: apt-get install make)", out)
	listed := map[string]string{}
	for line := range strings.Lines(string(out)) {
		name, text, ok := strings.Cut(strings.TrimRight(line, "\n"), "\t")
		require.True(t, ok, "make help: line %q is not TARGET<tab>TEXT", line)
		listed[name] = text
	}
	for _, target := range phony {
		if help[target] == "" {
			continue // reported above
		}
		text, ok := listed[target]
		if assert.True(t, ok, "make help does not list %s", target) {
			assert.Equal(t, help[target], text, "make help: text of %s", target)
		}
	}
	for name := range listed {
		assert.True(t, slices.Contains(phony, name), "make help lists %s, which .PHONY does not declare", name)
	}
}
