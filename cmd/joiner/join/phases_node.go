// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// ReadyInterval is how often the Node is read while waiting for Ready: a
// GET is cheap, and the join is done the moment the Node is Ready.
var ReadyInterval = 250 * time.Millisecond

// waitReady polls the Node with the node's own credentials, printing its
// conditions whenever they change and when the wait times out.
func waitReady(ctx context.Context, d *data) error {
	client, err := nodeClient(d)
	if err != nil {
		return err
	}
	var last string
	var node *corev1.Node
	err = pollEvery(ctx, min(d.opts.Interval, ReadyInterval), d.cfg.Timeouts.NodeReady.Duration, func(ctx context.Context) error {
		n, err := client.CoreV1().Nodes().Get(ctx, d.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node = n
		if s := Conditions(n); s != last {
			fmt.Fprintf(d.opts.Log, "[node-ready] %s: %s\n", n.Name, s)
			last = s
		}
		if !IsReady(n) {
			return errors.New("not Ready")
		}
		return nil
	})
	if err != nil {
		state := "never registered"
		if node != nil {
			state = Conditions(node)
		}
		return fmt.Errorf("Node %s is not Ready after %s (%s): %w; run `joiner doctor --node %s` with an admin kubeconfig and read the kubelet's log",
			d.cfg.NodeName, d.cfg.Timeouts.NodeReady.Duration, state, err, d.cfg.NodeName)
	}
	return nil
}

// IsReady reports the Node's Ready condition.
func IsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Conditions renders a Node's conditions on one line, Ready first.
func Conditions(n *corev1.Node) string {
	if len(n.Status.Conditions) == 0 {
		return "no conditions yet"
	}
	conds := slices.Clone(n.Status.Conditions)
	slices.SortStableFunc(conds, func(a, b corev1.NodeCondition) int {
		if a.Type == corev1.NodeReady {
			return -1
		}
		if b.Type == corev1.NodeReady {
			return 1
		}
		return strings.Compare(string(a.Type), string(b.Type))
	})
	var parts []string
	for _, c := range conds {
		s := fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue && c.Message != "" {
			s += " (" + c.Reason + ": " + c.Message + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// ensureRegistration sets missing labels with the node's own credentials
// (NodeRestriction allows a kubelet its own labels, not taints) and
// checks the taints registered.
func ensureRegistration(ctx context.Context, d *data) error {
	client, err := nodeClient(d)
	if err != nil {
		return err
	}
	var missingTaints []string
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, d.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		missingTaints = nil
		for _, t := range d.cfg.Taints {
			if !slices.ContainsFunc(n.Spec.Taints, func(have corev1.Taint) bool { return have.MatchTaint(&t) && have.Value == t.Value }) {
				missingTaints = append(missingTaints, t.ToString())
			}
		}
		changed := false
		for k, v := range d.cfg.Labels {
			if n.Labels[k] != v {
				if n.Labels == nil {
					n.Labels = map[string]string{}
				}
				n.Labels[k] = v
				changed = true
			}
		}
		if !changed {
			return nil
		}
		_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if err == nil {
			fmt.Fprintf(d.opts.Log, "[node-registration] labels set on %s\n", n.Name)
			if d.joined {
				d.finished = append(d.finished, "labels set")
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("setting labels on Node %s: %w", d.cfg.NodeName, err)
	}
	if len(missingTaints) > 0 {
		return fmt.Errorf("Node %s registered without taints %s (a kubelet may not add taints to itself later); "+
			"add them with `kubectl taint node %s ...` using an admin credential", d.cfg.NodeName, strings.Join(missingTaints, ", "), d.cfg.NodeName)
	}
	return nil
}
