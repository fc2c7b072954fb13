// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package fuzzkit

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestImageReadsWhatCompactKept(t *testing.T) {
	const size, kept = 16, 4
	img := make([]byte, 5*size)
	for s := 2; s < 5; s++ {
		copy(img[s*size:], bytes.Repeat([]byte{byte('a' + s)}, kept))
	}
	m := Image{Data: Compact(img, 2, size, kept), First: 2, SectorSize: size, Kept: kept}
	assert.Equal(t, 3*kept, len(m.Data))
	got, err := io.ReadAll(io.NewSectionReader(m, 0, 1<<20))
	require.NoError(t, err)
	assert.Equal(t, img, got)
	n, err := m.ReadAt(make([]byte, 4), 5*size)
	assert.Equal(t, 0, n)
	assert.ErrorIs(t, err, io.EOF)
	_, err = m.ReadAt(make([]byte, 4), -1)
	assert.Error(t, err)
	n, err = m.ReadAt(make([]byte, 4), 1<<62) // far past the end: no overflow
	assert.Equal(t, 0, n)
	assert.ErrorIs(t, err, io.EOF)
}
