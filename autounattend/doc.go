// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package autounattend renders the answer files and seed discs that make an
// operating system install itself: Windows Autounattend.xml (Server 2019,
// 2022, 2025) and its post-sysprep counterpart, Ubuntu autoinstall, cloud-init
// NoCloud, Debian preseed and kickstart. It has no Packer dependency.
//
// Every config is validated as a whole: Validate returns a *ValidationError
// listing every problem, each naming the field (by its HCL key) and what is
// allowed. Rendering is deterministic: the same config gives the same bytes,
// with one exception: a Linux password given in plain text is hashed with a
// random salt unless Linux.PasswordSalt is set.
package autounattend
