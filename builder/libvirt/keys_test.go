// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/bootcommand"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBootCommandKeys(t *testing.T) {
	m := NewMockDriver()
	seq, err := bootcommand.GenerateExpressionSequence("aB:<enter><leftShiftOn>x<leftShiftOff>y<f2>")
	require.NoError(t, err)
	require.NoError(t, seq.Do(context.Background(), &sendKeyDriver{domain: "vm", keys: m}))
	assert.Equal(t, [][]uint32{
		{30},               // a
		{keyLeftShift, 48}, // B
		{keyLeftShift, 39}, // :
		{keyEnter},         // <enter>
		{keyLeftShift, 45}, // x with shift held
		{21},               // y after release
		{keyF1 + 1},        // <f2>
	}, m.Keys)
}

func TestBootCommandRejectsUntypable(t *testing.T) {
	d := &sendKeyDriver{domain: "vm", keys: NewMockDriver()}
	assert.ErrorContains(t, d.SendKey('é', bootcommand.KeyPress), "cannot be typed")
	assert.ErrorContains(t, d.SendSpecial("hyper", bootcommand.KeyPress), "unknown special key")
}
