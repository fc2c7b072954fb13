// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package phases

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type data struct{ ran []string }

func TestRunnerOrderSkipAndError(t *testing.T) {
	boom := errors.New("boom")
	step := func(name string, err error) Phase[*data] {
		return Phase[*data]{Name: name, Help: name + " help", Run: func(_ context.Context, d *data) error {
			d.ran = append(d.ran, name)
			return err
		}}
	}
	skipped := step("skipped", nil)
	skipped.RunIf = func(*data) bool { return false }
	var out bytes.Buffer
	r := Runner[*data]{Out: &out, Phases: []Phase[*data]{step("a", nil), skipped, step("b", boom), step("c", nil)}}
	d := &data{}
	err := r.Run(context.Background(), d)

	assert.Equal(t, []string{"a", "b"}, d.ran, "stops at the failing phase, skips by RunIf")
	require.ErrorIs(t, err, boom)
	assert.EqualError(t, err, "phase b: boom")
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "b", pe.Phase)
	assert.Equal(t, "[a] a help\n[b] b help\n", out.String())
}
