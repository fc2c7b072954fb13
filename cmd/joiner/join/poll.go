// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// poll retries fn every Interval until it succeeds, returns a permanent
// error, or timeout passes; the last error is returned.
func poll(ctx context.Context, d *data, timeout time.Duration, fn func(context.Context) error) error {
	return pollEvery(ctx, d.opts.Interval, timeout, fn)
}

func pastDeadline(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(d)
}

func pollEvery(ctx context.Context, interval, timeout time.Duration, fn func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		err := fn(ctx)
		if err == nil {
			return true, nil
		}
		// An attempt cut short by the wait's own deadline says nothing
		// about the cluster: keep the error before it. (The deadline may
		// have passed before ctx says so.)
		if !pastDeadline(ctx) || last == nil {
			last = err
		}
		if isPermanent(err) {
			return false, err
		}
		return false, nil
	})
	if err != nil && last != nil {
		if isPermanent(err) {
			return errors.Unwrap(err)
		}
		return fmt.Errorf("gave up after %s: %w", timeout, last)
	}
	return err
}

// errPermanent marks an error a retry cannot fix.
type errPermanent struct{ error }

func (e errPermanent) Unwrap() error { return e.error }

func permanent(err error) error { return errPermanent{err} }

func isPermanent(err error) bool {
	var p errPermanent
	return errors.As(err, &p)
}
