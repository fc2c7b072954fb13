// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package ctxio stops long copies (volume uploads and downloads) when a
// build is cancelled: a Reader or Writer that fails once its context is done.
package ctxio

import (
	"context"
	"io"
)

// Reader reads from R until Ctx is done, then returns Ctx's error.
type Reader struct {
	Ctx context.Context
	R   io.Reader
}

func (r Reader) Read(p []byte) (int, error) {
	if err := r.Ctx.Err(); err != nil {
		return 0, err
	}
	return r.R.Read(p)
}

// Writer writes to W until Ctx is done, then returns Ctx's error.
type Writer struct {
	Ctx context.Context
	W   io.Writer
}

func (w Writer) Write(p []byte) (int, error) {
	if err := w.Ctx.Err(); err != nil {
		return 0, err
	}
	return w.W.Write(p)
}
