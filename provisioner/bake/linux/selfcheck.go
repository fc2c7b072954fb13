// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import "github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"

// SelfCheck renders the Linux self-check: every check runs, each problem
// is printed as "problem: ...", and the script fails when there is one.
func SelfCheck(c node.SelfCheck) []byte { return render("self-check.sh.tmpl", c) }
