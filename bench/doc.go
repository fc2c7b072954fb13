// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package bench holds kubenode's benchmarks: speed and memory figures that
// bench/run.sh prints side by side with the tool each one is compared to.
// They are benchmarks, not timed tests: nothing here fails on a slow machine.
package bench
