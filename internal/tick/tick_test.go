// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package tick

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestEveryCallsUntilStopped(t *testing.T) {
	var n atomic.Int32
	stop := Every(10*time.Millisecond, func() bool { n.Add(1); return true })
	time.Sleep(100 * time.Millisecond)
	stop()
	stop() // a second stop is harmless
	seen := n.Load()
	assert.GreaterOrEqual(t, seen, int32(3), "called every 10 ms for 100 ms")
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, seen, n.Load(), "no call after stop")
}

// A stop that lands while fn runs returns only when fn has returned, and
// the tick that was due meanwhile does not call fn again.
func TestStopWaitsForARunningCall(t *testing.T) {
	var running, after atomic.Bool
	entered := make(chan struct{}, 1)
	stop := Every(time.Millisecond, func() bool {
		if after.Load() {
			t.Error("fn called after stop returned")
		}
		running.Store(true)
		select {
		case entered <- struct{}{}:
		default:
		}
		time.Sleep(30 * time.Millisecond)
		running.Store(false)
		return true
	})
	<-entered
	stop()
	after.Store(true)
	assert.False(t, running.Load(), "stop returned while fn was still running")
	time.Sleep(20 * time.Millisecond)
}

func TestEveryEndsWhenFnSaysSo(t *testing.T) {
	var n atomic.Int32
	stop := Every(5*time.Millisecond, func() bool { return n.Add(1) < 2 })
	defer stop()
	time.Sleep(80 * time.Millisecond)
	assert.Equal(t, int32(2), n.Load(), "called until it returned false, then never again")
}
