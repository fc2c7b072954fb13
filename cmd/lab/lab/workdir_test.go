package lab

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A -work-dir that does not exist yet is made 0700, as the default one
// under $TMPDIR is: it holds the control plane's PKI, the seeds with their
// bootstrap tokens and the logs.
func TestNewWorkDirIsItsOwnersOnly(t *testing.T) {
	tmp := t.TempDir()
	joiner := filepath.Join(tmp, "kubenode-joiner")
	require.NoError(t, os.WriteFile(joiner, nil, 0o755))
	work := filepath.Join(tmp, "new", "work")
	o := Options{Root: tmp, Joiner: joiner, KubernetesDir: tmp, SkipBuild: true, ImageDir: tmp, WorkDir: work}
	var mode os.FileMode
	l, err := start(context.Background(), o, func(*Lab) []stage {
		return []stage{{"look", func(context.Context) error {
			fi, err := os.Stat(work)
			if err == nil {
				mode = fi.Mode().Perm()
			}
			return err
		}}}
	})
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), mode, "the work directory")
	fi, err := os.Stat(filepath.Dir(work))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "a directory made for it")
	require.NoError(t, l.Close())
}
