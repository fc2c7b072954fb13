// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package attesttest

import (
	"testing"

	"github.com/spdx/tools-golang/spdx"
)

// recorder is a testing.TB that records failures.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()                       {}
func (r *recorder) Errorf(string, ...interface{}) { r.failed = true }

func TestBaked(t *testing.T) {
	doc := &spdx.Document{Packages: []*spdx.Package{
		{PackageName: "kubelet", PackageVersion: "v1.33.13"},
		{PackageName: "containerd", PackageVersion: "1.6.20~ds1-1+b1"},
		{PackageName: "runc", PackageVersion: "v1.3.10"},
	}}
	for _, tc := range []struct {
		name, baked string
		ok          bool
	}{
		{"kubelet", "v1.33.13", true},
		{"kubelet", "v1.33.1", false},
		{"containerd", "1.6.20~ds1", true},
		{"containerd", "v1.6.20~ds1", true},
		{"containerd", "1.7.0", false},
		{"runc", "1.3.10", true},
		{"runc", "1.3.1", false},
		{"runc", "", false},
		{"crictl", "v1.33.0", false},
	} {
		r := &recorder{TB: t}
		Baked(r, doc, tc.name, tc.baked)
		if r.failed == tc.ok {
			t.Errorf("Baked(%s, %q): failed %t, want %t", tc.name, tc.baked, r.failed, !tc.ok)
		}
	}
}
