package autounattend

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current renderers")

// golden compares got with testdata/<name>, or rewrites that file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
		return
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "golden file missing: run `go test ./autounattend -run %s -update`", t.Name())
	assert.Equal(t, string(want), string(got), "%s differs from the renderer's output; if the change is intended, rerun with -update and review the diff", p)
}
