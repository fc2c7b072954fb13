// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	cpuModelRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	cpuFeatureRE = regexp.MustCompile(`^[+-][A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// parseCPUModel reads cpu_model: a mode or model name, then optional
// ",+feature" (required) or ",-feature" (disabled) parts, as QEMU's -cpu
// writes them. "" is the accelerator's default.
func parseCPUModel(s string) (cpuSpec, error) {
	if s == "" {
		return cpuSpec{}, nil
	}
	parts := strings.Split(s, ",")
	if !cpuModelRE.MatchString(parts[0]) {
		return cpuSpec{}, fmt.Errorf("%q is not a CPU model; use \"host-passthrough\", \"host-model\", \"maximum\", or a QEMU model such as \"Nehalem\", optionally with features: \"Nehalem,+aes,-vmx\"", s)
	}
	spec := cpuSpec{Model: parts[0]}
	for _, f := range parts[1:] {
		if !cpuFeatureRE.MatchString(f) {
			return cpuSpec{}, fmt.Errorf("%q: %q is not a CPU feature; write +name to require one, -name to disable one, e.g. \"Nehalem,+aes,-vmx\"", s, f)
		}
		spec.Features = append(spec.Features, f)
	}
	return spec, nil
}

// prepareCPUTopology checks sockets, cores and threads against cpus, and
// sets cpus to their product when it is unset.
func (c *Config) prepareCPUTopology(add func(key, format string, args ...any)) {
	if c.Sockets == 0 && c.Cores == 0 && c.Threads == 0 {
		return
	}
	bad := false
	for _, v := range []struct {
		key string
		n   int
	}{{"sockets", c.Sockets}, {"cores", c.Cores}, {"threads", c.Threads}} {
		if v.n < 0 {
			add(v.key, "%d: must be 1 or more (or unset)", v.n)
			bad = true
		}
	}
	if bad {
		return
	}
	t := c.cpuTopology()
	product := t.Sockets * t.Cores * t.Threads
	switch {
	case c.CPUs == 0:
		c.CPUs = product
	case c.CPUs != product:
		add("cpus", "%d does not match sockets × cores × threads = %d × %d × %d = %d: set cpus to %[5]d or leave it unset, or change sockets, cores or threads (an unset one counts as 1)",
			c.CPUs, t.Sockets, t.Cores, t.Threads, product)
	}
}

// cpuTopology is the topology the domain gets: zero when none of sockets,
// cores and threads is set, else the unset ones are 1.
func (c *Config) cpuTopology() cpuTopology {
	if c.Sockets <= 0 && c.Cores <= 0 && c.Threads <= 0 {
		return cpuTopology{}
	}
	one := func(n int) int {
		if n <= 0 {
			return 1
		}
		return n
	}
	return cpuTopology{Sockets: one(c.Sockets), Cores: one(c.Cores), Threads: one(c.Threads)}
}

// cpuSpec is the domain's CPU from cpu_model and the topology.
func (c *Config) cpuSpec() cpuSpec {
	spec, _ := parseCPUModel(c.CPUModel) // checked in Prepare
	spec.Topology = c.cpuTopology()
	return spec
}
