// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !windows

package join

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
)

type linuxHost struct{ execHost }

func defaultHost() Host { return linuxHost{} }

// Preflight: the kubelet refuses to run with swap on unless told to.
func (linuxHost) Preflight(cfg *config.Config) error {
	if slices.Contains(cfg.IgnorePreflightErrors, "Swap") || slices.Contains(cfg.IgnorePreflightErrors, "all") {
		return nil
	}
	for _, a := range cfg.KubeletExtraArgs {
		if a.Name == "fail-swap-on" && a.Value == "false" {
			return nil
		}
	}
	data, err := os.ReadFile("/proc/swaps")
	if err != nil {
		return nil // no /proc/swaps: no swap
	}
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) > 1 {
		return fmt.Errorf("swap is on (%s): turn it off (`swapoff -a` and remove it from /etc/fstab), or add Swap to ignorePreflightErrors", strings.Fields(lines[1])[0])
	}
	return nil
}

func (linuxHost) DialCRI(ctx context.Context, endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "unix" {
		return fmt.Errorf("%q is not a unix:// endpoint", endpoint)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", u.Path)
	if err != nil {
		return err
	}
	return c.Close()
}

// On Linux kubeadm's kubelet drop-in reads kubeadm-flags.env itself.
func (linuxHost) PrepareKubelet(context.Context, []string) error { return nil }
func (linuxHost) RestartKubelet(context.Context, []string) error { return nil }

// KubeletHasFlags: kubeadm's drop-in reads kubeadm-flags.env itself.
func (linuxHost) KubeletHasFlags(context.Context, []string) (bool, error) { return true, nil }

// DisableFirstBoot disables the systemd unit when systemd started us; its
// ConditionPathExists already keeps it from running again.
func (linuxHost) DisableFirstBoot() error {
	if os.Getenv("INVOCATION_ID") == "" {
		return nil // not run by systemd (by hand, or in a test)
	}
	out, err := exec.Command("systemctl", "disable", units.JoinerServiceName+".service").CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl disable: %w: %s", err, out)
	}
	return nil
}

func lookPathIn(path, name string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("not found")
}
