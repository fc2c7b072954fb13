// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !windows

package main

import "github.com/kubenode/packer-plugin-kubenode/cmd/joiner/doctor"

// hostOS is doctor's default --os without an image manifest: the OS it
// runs on, Linux for every OS but Windows.
const hostOS = doctor.Linux
