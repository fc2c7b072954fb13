// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
)

func TestWindowsFirstBootPasswordIsNotTheBuilds(t *testing.T) {
	a, err := cloneAnswerFile("", false)
	require.NoError(t, err)
	b, err := cloneAnswerFile("", false)
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "a random password for each build")

	xml, err := cloneAnswerFile("Clone-Only-1!", false)
	require.NoError(t, err)
	assert.Contains(t, string(xml), autounattend.EncodeUnattendPassword("Clone-Only-1!", "AdministratorPassword"))

	for i := 0; i < 50; i++ {
		pw, err := randomPassword()
		require.NoError(t, err)
		assert.Len(t, pw, 32)
		assert.Regexp(t, `[A-Z]`, pw)
		assert.Regexp(t, `[a-z]`, pw)
		assert.Regexp(t, `[0-9]`, pw)
		assert.Regexp(t, `[-_.!#%+=]`, pw)
	}
}
