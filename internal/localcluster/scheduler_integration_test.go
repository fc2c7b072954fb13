// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestControlPlaneSchedules: the control plane runs a scheduler. A Pod with
// no nodeName in a cluster with no nodes gets PodScheduled=False with reason
// Unschedulable, which only a scheduler writes (without one the Pod stays
// Pending with no condition), and the scheduler holds its lease.
func TestControlPlaneSchedules(t *testing.T) {
	began := time.Now()
	cp := controlPlaneT(t, ControlPlaneOptions{})
	t.Logf("control plane up in %s", time.Since(began).Round(100*time.Millisecond))
	ctx := context.Background()

	lease, err := cp.SchedulerLease(ctx)
	if err != nil {
		t.Fatalf("reading the lease %s: %v", SchedulerLease, err)
	}
	if lease.HolderIdentity == "" {
		t.Errorf("the lease %s has no holder: %+v", SchedulerLease, lease)
	}
	if lease.LeaseDurationSeconds <= 0 {
		t.Errorf("the lease %s has no duration: %+v", SchedulerLease, lease)
	}
	if age := time.Since(lease.RenewTime); age < -time.Second || age > time.Duration(lease.LeaseDurationSeconds)*time.Second {
		t.Errorf("the lease %s was renewed %s ago, longer than its %d s duration: %+v", SchedulerLease, age.Round(time.Second), lease.LeaseDurationSeconds, lease)
	}

	const ns, name = "scheduling", "waits-for-a-node"
	if err := cp.api(ctx, http.MethodPost, "/api/v1/namespaces", "application/json",
		strings.NewReader(fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns)), nil); err != nil {
		t.Fatal(err)
	}
	// No image is ever pulled: there is no node to run it.
	pod := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{"containers":[{"name":"pause","image":"registry.k8s.io/pause:3.10"}]}}`, name)
	if err := cp.api(ctx, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", "application/json", strings.NewReader(pod), nil); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	var seen string
	err = poll(ctx, cp.scheduler, "marking Pod "+ns+"/"+name+" unschedulable", 30*time.Second, func() (bool, error) {
		var p struct {
			Spec   struct{ NodeName string }
			Status struct {
				Phase      string
				Conditions []struct{ Type, Status, Reason, Message string }
			}
		}
		if err := cp.api(ctx, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods/"+name, "", nil, &p); err != nil {
			return false, err
		}
		seen = fmt.Sprintf("phase %s, nodeName %q, conditions %+v", p.Status.Phase, p.Spec.NodeName, p.Status.Conditions)
		for _, c := range p.Status.Conditions {
			if c.Type == "PodScheduled" {
				if c.Status != "False" || c.Reason != "Unschedulable" {
					return false, fmt.Errorf("PodScheduled is %s/%s, want False/Unschedulable", c.Status, c.Reason)
				}
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v; the Pod: %s", err, seen)
	}
	t.Logf("Pod marked unschedulable %s after its creation: %s", time.Since(created).Round(100*time.Millisecond), seen)
}
