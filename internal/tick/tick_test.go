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

func TestEveryEndsWhenFnSaysSo(t *testing.T) {
	var n atomic.Int32
	stop := Every(5*time.Millisecond, func() bool { return n.Add(1) < 2 })
	defer stop()
	time.Sleep(80 * time.Millisecond)
	assert.Equal(t, int32(2), n.Load(), "called until it returned false, then never again")
}
