// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package ctxio

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := Reader{ctx, strings.NewReader("abcdef")}
	var w bytes.Buffer
	cw := Writer{ctx, &w}
	buf := make([]byte, 3)
	n, err := r.Read(buf)
	assert.Equal(t, 3, n)
	assert.NoError(t, err)
	_, err = cw.Write(buf[:n])
	assert.NoError(t, err)
	cancel()
	_, err = r.Read(buf)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = cw.Write(buf)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "abc", w.String())
}
