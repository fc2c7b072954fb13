// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
)

func prepareKubelet(ctx context.Context, d *data) error {
	return d.opts.Host.PrepareKubelet(ctx, d.kubeadmFlags)
}

// restartKubelet gives the kubelet service kubeadm's flags, then ours. On
// a node that is already a member it does so only when the service lacks
// them: an earlier run that stopped between kubeadm-join and this phase.
func restartKubelet(ctx context.Context, d *data) error {
	var flags []string
	env, err := os.ReadFile(d.opts.Paths.KubeadmFlags)
	switch {
	case err == nil:
		if flags, err = units.ParseKubeadmFlags(string(env)); err != nil {
			return fmt.Errorf("%s: %w", d.opts.Paths.KubeadmFlags, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	if d.kubeadmFlags == nil {
		d.kubeadmFlags = d.cfg.KubeletFlags()
	}
	// kubeadm's flags, then ours: our name, labels and taints win.
	if env != nil {
		flags = append(flags, d.kubeadmFlags...)
	}
	if d.joined {
		has, err := d.opts.Host.KubeletHasFlags(ctx, flags)
		if err != nil {
			return fmt.Errorf("reading the kubelet service's flags: %w", err)
		}
		if has {
			return nil
		}
		fmt.Fprintf(d.opts.Log, "[kubelet-service] the kubelet service lacks the flags of %s (an earlier run stopped before applying them): applying them\n", d.opts.Paths.KubeadmFlags)
		d.finished = append(d.finished, "kubeadm's flags applied to the kubelet service")
	}
	return d.opts.Host.RestartKubelet(ctx, flags)
}
