// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/skew"
)

// preflight checks what kubeadm's own preflight would find late or
// explain less well.
func preflight(ctx context.Context, d *data) error {
	var problems []error
	h := d.opts.Host
	if err := h.DialCRI(ctx, d.cfg.CRISocket); err != nil {
		problems = append(problems, fmt.Errorf("container runtime at %s (criSocket) does not answer: %w; start containerd", d.cfg.CRISocket, err))
	}
	if err := h.Preflight(d.cfg); err != nil {
		problems = append(problems, err)
	}
	kubelet, kubeadm := d.cfg.KubeletPath, d.cfg.KubeadmPath
	if kubelet == "" {
		kubelet = "kubelet"
	}
	if kubeadm == "" {
		kubeadm = "kubeadm"
	}
	server := d.serverVersion
	if out, err := versionOutput(ctx, h, d.opts.Env, kubelet, "--version"); err != nil {
		problems = append(problems, fmt.Errorf("kubelet: %w (kubenode-bake installs it)", err))
	} else if err := skew.Kubelet.Check(strings.TrimPrefix(out, "Kubernetes "), server); err != nil {
		problems = append(problems, err)
	}
	// kubeadm's version also decides the JoinConfiguration's API.
	if v, err := KubeadmVersion(ctx, h, d.opts.Env, kubeadm); err != nil {
		problems = append(problems, err)
	} else if err := skew.Kubeadm.Check("v"+v.String(), server); err != nil {
		problems = append(problems, err)
	} else if api, err := KubeadmAPIFor(v); err != nil {
		problems = append(problems, err)
	} else {
		d.kubeadmVersion, d.kubeadmAPI = v, &api
	}
	return errors.Join(problems...)
}
