// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package node

// How a node made from the image joins its cluster: the bake's
// `bootstrap` key.
const (
	// BootstrapJoiner: kubenode's joiner and its first-boot service join
	// the node from the seed disc's credentials.
	BootstrapJoiner = "joiner"
	// BootstrapClusterAPI: cloud-init runs the user data Cluster API's
	// kubeadm bootstrap provider writes (kubeadm join); the image has no
	// joiner. Linux only.
	BootstrapClusterAPI = "cluster-api"
)

// StepClusterAPI is the Linux step that readies cloud-init for Cluster
// API's bootstrap data.
const StepClusterAPI = "cluster-api"
