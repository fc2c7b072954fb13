// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build windows

package join

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Microsoft/go-winio"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

type windowsHost struct{ execHost }

func defaultHost() Host { return windowsHost{} }

func (windowsHost) Preflight(*config.Config) error { return nil }

func (windowsHost) DialCRI(ctx context.Context, endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "npipe" {
		return fmt.Errorf("%q is not an npipe:// endpoint", endpoint)
	}
	// npipe:////./pipe/containerd-containerd -> \\.\pipe\containerd-containerd
	pipe := `\\` + strings.ReplaceAll(strings.TrimPrefix(u.Path, "//"), "/", `\`)
	c, err := winio.DialPipeContext(ctx, pipe)
	if err != nil {
		return err
	}
	return c.Close()
}

// PrepareKubelet registers the kubelet with the flags it must register the
// Node with, before kubeadm starts it: an sc.exe service cannot read
// kubeadm-flags.env.
func (h windowsHost) PrepareKubelet(ctx context.Context, flags []string) error {
	if err := startService(ctx, units.ContainerdServiceName); err != nil {
		return err
	}
	return setKubeletArgs(flags)
}

// RestartKubelet applies kubeadm-flags.env: re-register, then restart
// containerd's dependent kubelet.
func (h windowsHost) RestartKubelet(ctx context.Context, flags []string) error {
	if err := setKubeletArgs(flags); err != nil {
		return err
	}
	if err := stopService(ctx, units.KubeletServiceName); err != nil {
		return err
	}
	if err := startService(ctx, units.ContainerdServiceName); err != nil {
		return err
	}
	return startService(ctx, units.KubeletServiceName)
}

// KubeletHasFlags compares the kubelet service's command line with the
// one setKubeletArgs registers for flags.
func (windowsHost) KubeletHasFlags(_ context.Context, flags []string) (bool, error) {
	m, err := mgr.Connect()
	if err != nil {
		return false, err
	}
	defer m.Disconnect()
	s, err := m.OpenService(units.KubeletServiceName)
	if err != nil {
		return false, fmt.Errorf("the kubelet service is not installed (kubenode-bake installs it): %w", err)
	}
	defer s.Close()
	c, err := s.Config()
	if err != nil {
		return false, err
	}
	return strings.EqualFold(c.BinaryPathName, kubeletCommandLine(c.BinaryPathName, flags)), nil
}

// kubeletCommandLine is the kubelet service's command line with flags,
// keeping how the service's current command line runs the kubelet
// (kube-log-runner and the log rotation the image chose).
func kubeletCommandLine(current string, flags []string) string {
	return units.CommandLine(units.KubeletServiceArgv(units.SplitCommandLine(current), flags...))
}

func (windowsHost) DisableFirstBoot() error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(units.JoinerServiceName)
	if err != nil {
		return nil // not installed as a service: run by hand
	}
	defer s.Close()
	c, err := s.Config()
	if err != nil {
		return err
	}
	c.StartType = mgr.StartDisabled
	return s.UpdateConfig(c)
}

func setKubeletArgs(flags []string) error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(units.KubeletServiceName)
	if err != nil {
		return fmt.Errorf("the kubelet service is not installed (kubenode-bake installs it): %w", err)
	}
	defer s.Close()
	c, err := s.Config()
	if err != nil {
		return err
	}
	c.BinaryPathName = kubeletCommandLine(c.BinaryPathName, flags)
	c.StartType = mgr.StartAutomatic
	if err := s.UpdateConfig(c); err != nil {
		return err
	}
	return keepRestartOnFailure(s)
}

// keepRestartOnFailure: ChangeServiceConfig leaves the failure actions
// alone, so the bake's restart after 10 s survives the re-registration;
// a kubelet service without them (registered by hand) gets them here.
func keepRestartOnFailure(s *mgr.Service) error {
	actions, err := s.RecoveryActions()
	if err != nil {
		return fmt.Errorf("reading the kubelet service's failure actions: %w", err)
	}
	if len(actions) > 0 {
		return nil
	}
	restart := []mgr.RecoveryAction{{Type: mgr.ServiceRestart, Delay: units.ServiceRestartDelayMS * time.Millisecond}}
	if err := s.SetRecoveryActions(restart, 0); err != nil {
		return fmt.Errorf("setting the kubelet service's failure actions: %w", err)
	}
	return nil
}

func startService(ctx context.Context, name string) error {
	return controlService(ctx, name, svc.Running, func(s *mgr.Service) error { return s.Start() })
}

func stopService(ctx context.Context, name string) error {
	return controlService(ctx, name, svc.Stopped, func(s *mgr.Service) error {
		_, err := s.Control(svc.Stop)
		return err
	})
}

func controlService(ctx context.Context, name string, want svc.State, act func(*mgr.Service) error) error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(name)
	if err != nil {
		return fmt.Errorf("service %s: %w", name, err)
	}
	defer s.Close()
	st, err := s.Query()
	if err != nil {
		return err
	}
	if st.State == want {
		return nil
	}
	if err := act(s); err != nil {
		return fmt.Errorf("service %s: %w", name, err)
	}
	return waitService(ctx, name, serviceState(want), func() (serviceState, error) {
		st, err := s.Query()
		return serviceState(st.State), err
	})
}

func lookPathIn(path, name string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		for _, ext := range []string{".exe", ""} {
			p := filepath.Join(dir, name+ext)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p, nil
			}
		}
	}
	return "", errors.New("not found")
}
