// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package phases runs a command as a linear list of named phases, as
// kubeadm's workflow does: each phase may be skipped by its RunIf, and a
// failure is reported as "phase <name>: <error>".
package phases

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Phase is one named step.
type Phase[D any] struct {
	Name string
	// Help says in a line what the phase does; printed as it starts.
	Help string
	// RunIf, when set, decides whether the phase runs.
	RunIf func(D) bool
	Run   func(ctx context.Context, data D) error
}

// Runner runs phases in order, logging each to Out.
type Runner[D any] struct {
	Phases []Phase[D]
	Out    io.Writer
	// Now is the clock (tests replace it).
	Now func() time.Time
}

// Run runs every phase whose RunIf allows it, stopping at the first
// failure, which is returned wrapped with the phase's name.
func (r *Runner[D]) Run(ctx context.Context, data D) error {
	now := r.Now
	if now == nil {
		now = time.Now
	}
	for _, p := range r.Phases {
		if p.RunIf != nil && !p.RunIf(data) {
			continue
		}
		fmt.Fprintf(r.Out, "[%s] %s\n", p.Name, p.Help)
		start := now()
		if err := p.Run(ctx, data); err != nil {
			return &Error{Phase: p.Name, Err: err}
		}
		if d := now().Sub(start); d >= time.Second {
			fmt.Fprintf(r.Out, "[%s] done in %s\n", p.Name, d.Round(100*time.Millisecond))
		}
	}
	return nil
}

// Error is a phase's failure.
type Error struct {
	Phase string
	Err   error
}

func (e *Error) Error() string { return "phase " + e.Phase + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }
