// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"fmt"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
)

// KubeconfigFlag is the cmd/lab flag that names an existing cluster to
// join the lab's nodes to. $KUBECONFIG alone never does: a lab run from a
// shell that exported it for other work would otherwise add tokens, Nodes
// and Jobs to that cluster unasked.
const KubeconfigFlag = "-kubeconfig"

// IgnoredKubeconfig is what the lab says when $KUBECONFIG is set (env) but
// no -kubeconfig was given; "" when there is nothing to say.
func IgnoredKubeconfig(env string) string {
	if env == "" {
		return ""
	}
	// -kubeconfig takes one file; $KUBECONFIG may list several.
	var files []string
	for _, f := range filepath.SplitList(env) {
		if f != "" {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		files = []string{env}
	}
	file, which := files[0], ""
	if len(files) > 1 {
		which = fmt.Sprintf(" one of the %d files it lists, the one that sets current-context (kubectl takes the first that does), such as the first:", len(files))
	}
	return fmt.Sprintf("lab: KUBECONFIG=%s is ignored: the lab starts a control plane of its own; to join the nodes to that cluster instead, pass%s %s %s (make lab LAB_FLAGS=\"%s %s\")",
		env, which, KubeconfigFlag, file, KubeconfigFlag, file)
}

// Target is the cluster a kubeconfig file selects: the one the lab, its
// `joiner token` and kubectl all talk to.
type Target struct {
	Context string // the file's current-context
	Server  string // its cluster's API server URL
}

// DescribeKubeconfig says which cluster the kubeconfig file at path
// selects, reading that file only (not $KUBECONFIG, not ~/.kube/config).
func DescribeKubeconfig(path string) (Target, error) {
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, nil)
	raw, err := cc.RawConfig()
	if err != nil {
		return Target{}, err
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return Target{}, err
	}
	return Target{Context: raw.CurrentContext, Server: rc.Host}, nil
}
