// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package guesttest

import (
	"bytes"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// UI is a Packer UI that keeps what it says (Out) and its errors (Err).
type UI struct {
	packersdk.Ui
	Out, Err *bytes.Buffer
}

// NewUI is a UI with nothing said yet.
func NewUI() UI {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return UI{Ui: &packersdk.BasicUi{Reader: &bytes.Buffer{}, Writer: out, ErrorWriter: errOut, PB: &packersdk.NoopProgressTracker{}}, Out: out, Err: errOut}
}
