// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// multi is a repeatable (and comma-splittable, see split) string flag.
type multi []string

func (m *multi) String() string { return strings.Join(*m, ",") }

// Set appends a value.
func (m *multi) Set(v string) error {
	*m = append(*m, v)
	return nil
}

func (m multi) split() []string {
	var out []string
	for _, v := range m {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func duration(d time.Duration) *metav1.Duration {
	if d == 0 {
		return nil
	}
	return &metav1.Duration{Duration: d}
}
