// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// serviceState is a Windows service's current state, with the values of
// SERVICE_STOPPED ... SERVICE_PAUSED (golang.org/x/sys/windows/svc.State).
type serviceState uint32

const (
	serviceStopped         serviceState = 1
	serviceStartPending    serviceState = 2
	serviceStopPending     serviceState = 3
	serviceRunning         serviceState = 4
	serviceContinuePending serviceState = 5
	servicePausePending    serviceState = 6
	servicePaused          serviceState = 7
)

func (s serviceState) String() string {
	switch s {
	case serviceStopped:
		return "Stopped"
	case serviceStartPending:
		return "StartPending"
	case serviceStopPending:
		return "StopPending"
	case serviceRunning:
		return "Running"
	case serviceContinuePending:
		return "ContinuePending"
	case servicePausePending:
		return "PausePending"
	case servicePaused:
		return "Paused"
	}
	return fmt.Sprintf("state %d", uint32(s))
}

// ServiceTimeout bounds the wait for a service to reach the state it was
// asked for (a service that crashes at start may stay StartPending or fall
// back to Stopped for ever); ServiceInterval is how often it is queried.
// Tests shrink both.
var (
	ServiceTimeout  = 2 * time.Minute
	ServiceInterval = 500 * time.Millisecond
)

// waitService queries the service name until it is in state want, up to
// ServiceTimeout; the error names the service and the state it was last in.
func waitService(ctx context.Context, name string, want serviceState, query func() (serviceState, error)) error {
	var last serviceState
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, ServiceInterval, ServiceTimeout, true, func(context.Context) (bool, error) {
		st, err := query()
		if err != nil {
			lastErr = err
			return false, nil
		}
		last, lastErr = st, nil
		return st == want, nil
	})
	if err == nil {
		return nil
	}
	if lastErr != nil {
		return fmt.Errorf("service %s did not reach %s within %s: querying it failed: %w; run `sc.exe query %s`",
			name, want, ServiceTimeout, lastErr, name)
	}
	return fmt.Errorf("service %s did not reach %s within %s: it is %s; read its log and run `sc.exe query %s`",
		name, want, ServiceTimeout, last, name)
}
