// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{args: nil, code: 2, stderr: "Usage:\n  joiner join"},
		{args: []string{"help"}, code: 0, stdout: "joiner token  [flags]"},
		{args: []string{"frob"}, code: 2, stderr: `unknown command "frob"`},
		{args: []string{"join", "--help"}, code: 0, stderr: "Usage: joiner join [flags]"},
		{args: []string{"token", "--help"}, code: 0, stderr: "--seed-iso"},
		{args: []string{"doctor", "--help"}, code: 0, stderr: "Usage: joiner doctor [flags]"},
		{args: []string{"doctor", "--help"}, code: 0, stderr: "(default: --image-manifest's os.family, else the OS doctor runs on, here " + hostOS + ")"},
		{args: []string{"doctor", "--os", "darwin"}, code: 2, stderr: `invalid value "darwin" for flag -os: want linux or windows`},
		{args: []string{"join", "--bogus"}, code: 2, stderr: "flag provided but not defined: -bogus"},
		{args: []string{"join", "extra"}, code: 2, stderr: "unexpected arguments: extra"},
		{args: []string{"join", "--label", "novalue"}, code: 1, stderr: `--label "novalue": want key=value`},
		{args: []string{"join", "--taint", "k=v"}, code: 1, stderr: `--taint "k=v": want key[=value]:Effect`},
		{args: []string{"token"}, code: 2, stderr: "give --output FILE and/or --seed-iso FILE"},
		{args: []string{"doctor", "--kubeconfig", "/nonexistent"}, code: 1, stderr: "loading the admin kubeconfig"},
		{args: []string{"version"}, code: 0, stdout: "joiner "},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, stderr.String())
		assert.Contains(t, stdout.String(), tc.stdout, "%v", tc.args)
		assert.Contains(t, stderr.String(), tc.stderr, "%v", tc.args)
	}
}
