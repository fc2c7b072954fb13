// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package golden compares what a test rendered with a file under the
// package's testdata/; `go test ./<pkg> -update` rewrites the files instead.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Update is the -update flag: rewrite the golden files from the renderers.
var Update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current renderers")

// Assert compares got with testdata/<name>, or rewrites that file with -update.
func Assert(t testing.TB, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *Update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
		return
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "golden file missing: rerun the test with -update (go test -run %s -update)", t.Name())
	assert.Equal(t, string(want), string(got), "%s differs from the renderer's output; if the change is intended, rerun with -update and review the diff", p)
}
