// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
)

// writeKubeadmConfig writes kubeadm's JoinConfiguration in the API read by
// the kubeadm preflight found (mode 0600: it holds the token).
func writeKubeadmConfig(_ context.Context, d *data) error {
	if d.kubeadmAPI == nil {
		return errors.New("kubeadm's version is not known: the preflight phase did not run")
	}
	data, err := RenderKubeadmJoinConfiguration(d.cfg, *d.kubeadmAPI)
	if err != nil {
		return err
	}
	d.kubeadmFlags = d.cfg.KubeletFlags()
	if err := config.WriteFileAtomic(d.opts.Paths.KubeadmConfig, data, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(d.opts.Log, "[kubeadm-config] wrote %s: a %s JoinConfiguration, for kubeadm v%s\n",
		d.opts.Paths.KubeadmConfig, d.kubeadmAPI.GroupVersion, d.kubeadmVersion)
	if note := tlsBootstrapNote(d.cfg, *d.kubeadmAPI, d.kubeadmVersion); note != "" {
		fmt.Fprintf(d.opts.Log, "[kubeadm-config] NOTE: %s\n", note)
	}
	return nil
}

// kubeadmJoin runs kubeadm join with the written configuration. On failure
// the configuration (with its token) is removed.
func kubeadmJoin(ctx context.Context, d *data) error {
	kubeadm := d.cfg.KubeadmPath
	if kubeadm == "" {
		kubeadm = "kubeadm"
	}
	tail := &tailWriter{max: 30}
	w := io.MultiWriter(d.opts.Log, tail)
	err := d.opts.Host.Run(ctx, d.opts.Env, w, kubeadm, "join", "--config", d.opts.Paths.KubeadmConfig)
	// Whatever kubeadm returned, its copy of the token has served: a later
	// phase may fail, and a node that has joined is not joined again.
	if rmErr := os.Remove(d.opts.Paths.KubeadmConfig); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		fmt.Fprintf(d.opts.Log, "[kubeadm-join] WARNING: could not remove %s, which holds the token: %v; delete it\n", d.opts.Paths.KubeadmConfig, rmErr)
	}
	if err != nil {
		return fmt.Errorf("`%s join --config %s` failed: %w\nlast lines of its output:\n%s\n"+
			"fix the cause above, run `kubeadm reset -f`, then run the joiner again", kubeadm, d.opts.Paths.KubeadmConfig, err, tail)
	}
	// The node has joined: from here on the kubelet's own credentials are
	// used, so the token goes now. On Linux the first-boot unit never runs
	// again once kubelet.conf exists, so a later phase that fails must not
	// leave it behind. cleanup tries again for what could not be removed.
	for _, err := range scrubTokens(d, "kubeadm-join") {
		fmt.Fprintf(d.opts.Log, "[kubeadm-join] WARNING: %v\n", err)
	}
	return nil
}

// tailWriter keeps the last max lines written to it.
type tailWriter struct {
	max   int
	lines []string
	part  bytes.Buffer
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.part.Write(p)
	for {
		line, err := t.part.ReadString('\n')
		if err != nil {
			t.part.WriteString(line)
			break
		}
		t.lines = append(t.lines, strings.TrimRight(line, "\r\n"))
		if len(t.lines) > t.max {
			t.lines = t.lines[1:]
		}
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	lines := t.lines
	if t.part.Len() > 0 {
		lines = append(slices.Clone(lines), t.part.String())
	}
	return "  " + strings.Join(lines, "\n  ")
}
