// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build windows

package main

import (
	"context"
	"fmt"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"golang.org/x/sys/windows/svc"
)

// runAsService runs the join under the service control manager: the
// service reports Running while the join works, stops when it ends (its
// exit code tells the SCM, whose recovery actions retry a failure), and a
// Stop request cancels the join.
func runAsService(do func(context.Context) error) error {
	return svc.Run(units.JoinerServiceName, &handler{do: do})
}

type handler struct {
	do  func(context.Context) error
	err error
}

func (h *handler) Execute(_ []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	status <- svc.Status{State: svc.StartPending}
	done := make(chan error, 1)
	go func() { done <- h.do(ctx) }()
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case err := <-done:
			h.err = err
			status <- svc.Status{State: svc.StopPending}
			if err != nil {
				return true, 1
			}
			return false, 0
		case r := <-req:
			switch r.Cmd {
			case svc.Interrogate:
				status <- r.CurrentStatus
			case svc.Stop, svc.Shutdown:
				cancel()
			default:
				fmt.Printf("unexpected service control request %d\n", r.Cmd)
			}
		}
	}
}
