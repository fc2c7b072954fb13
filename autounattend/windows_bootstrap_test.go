// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/scripttmpl"
)

// The script templates print every value through a quoting function, and
// the check would refuse one that printed a value as it is.
func TestScriptTemplatesQuoteEveryValue(t *testing.T) {
	require.NoError(t, scripts.Check())
	assert.Equal(t, []string{"bootstrap.ps1.tmpl", "communicator", "serial-writer.ps1.tmpl"}, scripts.Names())

	files := fstest.MapFS{}
	paths, err := fs.Glob(scriptFiles, scriptPattern)
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		data, err := fs.ReadFile(scriptFiles, p)
		require.NoError(t, err)
		assert.NotContains(t, string(data), "\r", "%s is stored with LF line ends: reading it adds the CR", p)
		files[p] = &fstest.MapFile{Data: data}
	}
	_, err = scripttmpl.Parse(files, scriptPattern, scriptFuncs, scriptSafe...)
	require.NoError(t, err)

	p := "scripts/bootstrap.ps1.tmpl"
	unquoted := strings.Replace(string(files[p].Data), "{{q .Username}}", "{{.Username}}", 1)
	require.NotEqual(t, string(files[p].Data), unquoted)
	files[p] = &fstest.MapFile{Data: []byte(unquoted)}
	_, err = scripttmpl.Parse(files, scriptPattern, scriptFuncs, scriptSafe...)
	assert.ErrorContains(t, err, "{{.Username}} prints a value through no quoting function")
}
