// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !windows

package main

import (
	"context"
	"errors"
)

func runAsService(func(context.Context) error) error {
	return errors.New("--windows-service is for Windows; on Linux the systemd unit runs `joiner join`")
}
