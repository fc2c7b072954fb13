// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func shrinkServiceWait(t *testing.T, timeout time.Duration) {
	oldTimeout, oldInterval := ServiceTimeout, ServiceInterval
	ServiceTimeout, ServiceInterval = timeout, time.Millisecond
	t.Cleanup(func() { ServiceTimeout, ServiceInterval = oldTimeout, oldInterval })
}

func TestWaitServiceReachesTheState(t *testing.T) {
	shrinkServiceWait(t, 5*time.Second)
	states := []serviceState{serviceStopped, serviceStartPending, serviceRunning}
	err := waitService(context.Background(), "containerd", serviceRunning, func() (serviceState, error) {
		st := states[0]
		if len(states) > 1 {
			states = states[1:]
		}
		return st, nil
	})
	require.NoError(t, err)
}

func TestWaitServiceGivesUpNamingTheServiceAndItsState(t *testing.T) {
	shrinkServiceWait(t, 50*time.Millisecond)
	start := time.Now()
	err := waitService(context.Background(), "kubelet", serviceRunning, func() (serviceState, error) { return serviceStartPending, nil })
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, "service kubelet did not reach Running within 50ms: it is StartPending; read its log and run `sc.exe query kubelet`", err.Error())
}

func TestWaitServiceReportsTheLastQueryError(t *testing.T) {
	shrinkServiceWait(t, 20*time.Millisecond)
	err := waitService(context.Background(), "containerd", serviceStopped, func() (serviceState, error) { return 0, errors.New("access denied") })
	require.ErrorContains(t, err, "service containerd did not reach Stopped within 20ms: querying it failed: access denied")
}
