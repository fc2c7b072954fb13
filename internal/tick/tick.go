// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package tick runs a function at an interval in the background: progress
// reports while a step waits, keepalives while a command runs.
package tick

import (
	"sync"
	"time"
)

// Every calls fn every d in a goroutine of its own, until fn returns false
// or stop is called. When stop returns, fn is not running and will not be
// called again; stop may be called more than once, but not from fn.
func Every(d time.Duration, fn func() bool) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				// A tick and stop may be ready together; select picks
				// either, so stop wins here.
				select {
				case <-done:
					return
				default:
				}
				if !fn() {
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-exited
	}
}
