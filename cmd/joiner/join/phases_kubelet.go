package join

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
)

// KubeletRegistrationFlags are the flags the kubelet must have at its
// first start so the Node registers with its name, labels and taints.
func KubeletRegistrationFlags(cfg *config.Config) []string {
	flags := []string{"--hostname-override=" + cfg.NodeName}
	if labels := labelList(cfg.Labels); labels != "" {
		flags = append(flags, "--node-labels="+labels)
	}
	if len(cfg.Taints) > 0 {
		var ts []string
		for _, t := range cfg.Taints {
			ts = append(ts, t.ToString())
		}
		flags = append(flags, "--register-with-taints="+strings.Join(ts, ","))
	}
	for _, a := range cfg.KubeletExtraArgs {
		flags = append(flags, "--"+a.Name+"="+a.Value)
	}
	return flags
}

func labelList(labels map[string]string) string {
	var parts []string
	for k, v := range labels {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

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
		d.kubeadmFlags = KubeletRegistrationFlags(d.cfg)
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
