// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fuzzkit helps fuzz targets of readers of untrusted bytes: it
// bounds the time one input may take (Within), and lays a short input out
// as a disc image (Image), so that the fuzzer mutates what a reader reads.
//
// Go's fuzzing engine has no per-input time limit: an input that makes a
// reader loop for ever stalls the run instead of being reported. Within
// turns it into a failure, which the engine records as a crasher.
package fuzzkit

import (
	"testing"
	"time"
)

// PerInput is the time an input of a reader of untrusted bytes may take:
// the readers do a few small reads, so anything near this is a loop. It
// leaves room for a machine loaded by the fuzzing workers themselves.
const PerInput = 5 * time.Second

// Within runs fn and fails t with the error fn returns (a broken
// invariant), or if fn has not returned after d. fn runs on a goroutine of
// its own, so it must not call t's Fatal methods; after a timeout it keeps
// running (a goroutine cannot be stopped), but the input is reported.
func Within(t testing.TB, d time.Duration, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d):
		t.Fatalf("the input took longer than %s: a loop?", d)
	}
}
