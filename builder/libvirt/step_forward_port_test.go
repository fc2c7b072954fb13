// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// setPackerCache points Packer's cache, where the port locks live, at a
// directory of the test's own.
func setPackerCache(t *testing.T) {
	t.Setenv("PACKER_CACHE_DIR", t.TempDir())
}

func itoa(i int) string { return strconv.Itoa(i) }

func countCalls(calls []string, call string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, call) {
			n++
		}
	}
	return n
}

func TestPortReservationHoldsTheLockUntilReleased(t *testing.T) {
	setPackerCache(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	a := &portReservation{min: port, max: port, tried: map[int]bool{}}
	got, err := a.next(context.Background())
	require.NoError(t, err)
	assert.Equal(t, port, got)
	// The port itself is free for QEMU to bind...
	l, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", itoa(port)))
	require.NoError(t, err, "the reservation must leave the port bindable")
	require.NoError(t, l.Close())

	// ...but another build is not given it while the first holds its lock.
	old := portSearchTimeout
	portSearchTimeout = 300 * time.Millisecond
	defer func() { portSearchTimeout = old }()
	b := &portReservation{min: port, max: port, tried: map[int]bool{}}
	_, err = b.next(context.Background())
	assert.Error(t, err, "a second reservation of a locked port")

	a.release()
	got, err = b.next(context.Background())
	require.NoError(t, err, "free again once released")
	assert.Equal(t, port, got)
	b.release()
}

func TestPortReservationNextNeverOffersATakenPortAgain(t *testing.T) {
	setPackerCache(t)
	r := &portReservation{min: 21000, max: 21001, tried: map[int]bool{}}
	p1, err := r.next(context.Background())
	require.NoError(t, err)
	p2, err := r.next(context.Background())
	require.NoError(t, err)
	assert.NotEqual(t, p1, p2)
	_, err = r.next(context.Background())
	assert.ErrorContains(t, err, "every port from 21000 to 21001 is taken")
	r.release()
}
