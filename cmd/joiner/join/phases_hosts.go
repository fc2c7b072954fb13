// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const (
	hostsBegin = "# BEGIN kubenode-joiner extraHosts"
	hostsEnd   = "# END kubenode-joiner extraHosts"
)

// writeHosts keeps one managed block in the hosts file; the file is written
// only when the block changes. A seed's host names the image does not use
// for its API server are written only if they are the host name of the
// server URL in the cluster-info discovery verified against the CA pin.
func writeHosts(_ context.Context, d *data) error {
	if err := d.cfg.CheckSeedHostnames(d.serverURL); err != nil {
		return fmt.Errorf("%w\nnothing was written to this node", err)
	}
	path := d.opts.Paths.Hosts
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	updated := HostsWithEntries(string(old), d.cfg.ExtraHosts)
	if updated == string(old) {
		return nil
	}
	if err := os.WriteFile(path, []byte(updated), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(d.opts.Log, "[hosts] wrote %d entries to %s\n", len(d.cfg.ExtraHosts), path)
	return nil
}

// HostsWithEntries returns hosts with the joiner's block replaced by
// entries (or removed when there are none), keeping its line endings.
func HostsWithEntries(hosts string, entries []corev1.HostAlias) string {
	eol := "\n"
	if strings.Contains(hosts, "\r\n") {
		eol = "\r\n"
	}
	var kept []string
	inBlock := false
	for _, line := range strings.SplitAfter(hosts, "\n") {
		trimmed := strings.TrimRight(line, "\r\n")
		switch {
		case trimmed == hostsBegin:
			inBlock = true
		case trimmed == hostsEnd:
			inBlock = false
		case !inBlock && line != "":
			kept = append(kept, line)
		}
	}
	out := strings.Join(kept, "")
	if len(entries) == 0 {
		return out
	}
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += eol
	}
	out += hostsBegin + eol
	for _, e := range entries {
		out += e.IP + " " + strings.Join(e.Hostnames, " ") + eol
	}
	return out + hostsEnd + eol
}
