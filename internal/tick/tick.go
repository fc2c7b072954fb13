// Package tick runs a function at an interval in the background: progress
// reports while a step waits, keepalives while a command runs.
package tick

import (
	"sync"
	"time"
)

// Every calls fn every d in a goroutine of its own, until fn returns false
// or stop is called (stop may be called more than once).
func Every(d time.Duration, fn func() bool) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if !fn() {
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}
