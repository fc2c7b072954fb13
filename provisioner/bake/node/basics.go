// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package node

// Node basics: what a node needs beside containerd and the kubelet, which a
// base image may lack. Time sync (Linux: chrony, ntpd or systemd-timesyncd
// enabled, systemd-timesyncd / chrony installed when none is; Windows: the
// Windows Time service started at boot), the root file system growing to
// the disk of every VM made from the image (growpart for cloud-init, or a
// oneshot unit where there is no cloud-init), and crictl.

// Step names of the basics and the self-check, on both OSes.
const (
	StepNodeBasics = "node-basics"
	StepTimeSync   = "time-sync"
	StepCrictl     = "crictl"
	StepSelfCheck  = "self-check"
)
