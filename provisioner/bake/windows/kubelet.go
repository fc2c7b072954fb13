// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The kubelet's share of a Windows node, as Kubernetes' "Resource
// Management for Windows nodes" (kubernetes/website
// content/en/docs/concepts/configuration/windows-resource-management.md)
// advises: Windows pages instead of ending processes when memory runs
// out, so Pods must not be scheduled onto the memory Windows itself needs
// (a system reserve of at least 2 GiB), and a kubelet at normal priority
// can be starved of CPU by the Pods it runs (ABOVE_NORMAL_PRIORITY_CLASS
// or above). The image's kubelet flags carry them; the joiner's
// configuration carries the same flags, so the joiner's re-registration
// of the service after kubeadm join keeps them, and in a Cluster API image
// the kubelet's wrapper passes them before kubeadm's.

// DefaultKubeletPriorityClass is kubelet_priority_class's default.
const DefaultKubeletPriorityClass = "ABOVE_NORMAL_PRIORITY_CLASS"

// DefaultKubeletSystemReserved is kubelet_system_reserved's default.
var DefaultKubeletSystemReserved = map[string]string{"memory": "2Gi"}

// KubeletPriorityClasses are the priority classes the kubelet knows
// (cmd/kubelet/app/init_windows.go); it refuses to start with another.
var KubeletPriorityClasses = []string{"IDLE_PRIORITY_CLASS", "BELOW_NORMAL_PRIORITY_CLASS", "NORMAL_PRIORITY_CLASS",
	"ABOVE_NORMAL_PRIORITY_CLASS", "HIGH_PRIORITY_CLASS", "REALTIME_PRIORITY_CLASS"}

// ReservableResources are the resources --system-reserved and
// --kube-reserved take.
var ReservableResources = []string{"cpu", "memory", "ephemeral-storage", "pid"}

// The kubelet flags of kubelet_priority_class, kubelet_system_reserved and
// kubelet_kube_reserved.
const (
	flagPriorityClass  = "windows-priorityclass"
	flagSystemReserved = "system-reserved"
	flagKubeReserved   = "kube-reserved"
)

// CheckKubeletResources reports the problems of kubelet_priority_class
// (empty: not set), kubelet_system_reserved and kubelet_kube_reserved, and
// of kubelet_extra_args setting their flags as well, each naming its key.
func CheckKubeletResources(priority string, system, kube, extraArgs map[string]string) []error {
	var errs []error
	if priority != "" && !slices.Contains(KubeletPriorityClasses, priority) {
		errs = append(errs, fmt.Errorf("kubelet_priority_class: %q is not a priority class the kubelet knows (%s)", priority, strings.Join(KubeletPriorityClasses, ", ")))
	}
	for _, r := range []struct {
		key  string
		list map[string]string
	}{{"kubelet_system_reserved", system}, {"kubelet_kube_reserved", kube}} {
		for _, name := range slices.Sorted(maps.Keys(r.list)) {
			if why := checkReserve(name, r.list[name]); why != "" {
				errs = append(errs, fmt.Errorf("%s[%q]: %s", r.key, name, why))
			}
		}
	}
	for flag, key := range map[string]string{flagPriorityClass: "kubelet_priority_class", flagSystemReserved: "kubelet_system_reserved", flagKubeReserved: "kubelet_kube_reserved"} {
		if _, set := extraArgs[flag]; set {
			errs = append(errs, fmt.Errorf("kubelet_extra_args[%q]: on Windows %s sets it; remove it from kubelet_extra_args", flag, key))
		}
	}
	return errs
}

// checkReserve says what is wrong with a reserve of value for resource
// name, "" when nothing is.
func checkReserve(name, value string) string {
	if !slices.Contains(ReservableResources, name) {
		return fmt.Sprintf("not a resource the kubelet reserves (%s)", strings.Join(ReservableResources, ", "))
	}
	if name == "pid" {
		if _, err := strconv.ParseUint(value, 10, 63); err != nil {
			return fmt.Sprintf("%q is not a number of process IDs", value)
		}
		return ""
	}
	q, err := resource.ParseQuantity(value)
	if err != nil || value != strings.TrimSpace(value) {
		return fmt.Sprintf("%q is not a quantity such as 500m (cpu) or 2Gi", value)
	}
	if q.Sign() < 0 {
		return fmt.Sprintf("%q is negative", value)
	}
	return ""
}

// kubeletImageFlags are the kubelet flags of the plan's priority class
// and reserves, sorted by name; an empty reserve has none.
func (p Plan) kubeletImageFlags() []string {
	p = p.WithDefaults()
	flags := []string{"--" + flagPriorityClass + "=" + p.KubeletPriorityClass}
	for flag, list := range map[string]map[string]string{flagSystemReserved: p.KubeletSystemReserved, flagKubeReserved: p.KubeletKubeReserved} {
		if len(list) == 0 {
			continue
		}
		var pairs []string
		for _, name := range slices.Sorted(maps.Keys(list)) {
			pairs = append(pairs, name+"="+list[name])
		}
		flags = append(flags, "--"+flag+"="+strings.Join(pairs, ","))
	}
	slices.Sort(flags)
	return flags
}

// kubeletImageArgs are kubeletImageFlags as the joiner's kubeletExtraArgs:
// flag name without dashes -> value.
func (p Plan) kubeletImageArgs() map[string]string {
	args := map[string]string{}
	for _, f := range p.kubeletImageFlags() {
		name, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		args[name] = value
	}
	return args
}
