// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"testing"

	"github.com/kubenode/packer-plugin-kubenode/internal/releasemirror"
)

// ReleaseMirror serves, on 127.0.0.1 until the test ends, the release
// files kubenode-bake downloads, in their upstream layout and checksum
// format (releasemirror; scripts/release-files.sh says which file came
// from where: none is an upstream asset). It returns the bake's
// `download_mirrors` for it and the CNI plugins version it serves.
func ReleaseMirror(t testing.TB, kubernetesDir string, v releasemirror.Versions) (map[string]string, string) {
	t.Helper()
	m, err := releasemirror.Serve(Root(), kubernetesDir, v, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m.Mirrors, m.CNIPlugins
}
