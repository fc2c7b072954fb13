// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package config

// Where a node looks for a join seed file (Paths.SeedFile), per OS.
const (
	SeedFileLinux   = "/etc/kubenode/joiner-seed.yaml"
	SeedFileWindows = `C:\ProgramData\kubenode\joiner-seed.yaml`
)

// Paths are where a node keeps what the joiner reads and writes. Defaults
// differ per OS (paths_windows.go, paths_other.go); tests point them at a
// temporary directory.
type Paths struct {
	// Config is the configuration kubenode-bake put in the image.
	Config string
	// KubeadmConfig is the JoinConfiguration the joiner writes for kubeadm
	// (it holds the token: mode 0600, removed after the join).
	KubeadmConfig string
	// KubeletConf is kubeadm's kubelet kubeconfig: present once joined.
	KubeletConf string
	// KubeadmFlags is the env file kubeadm writes the kubelet's flags to.
	KubeadmFlags string
	// Hosts is the system hosts file.
	Hosts string
	// Log is the joiner's log file.
	Log string
	// SeedFile is a join seed delivered as a file rather than a disc (by
	// cloud-init user data, or the user's own tooling): read, under the
	// same rules as a seed disc, while the joiner waits for its seed, and
	// removed after the join.
	SeedFile string
	// SeedDevices are glob patterns of block devices that may hold the join
	// seed disc (Linux; on Windows every drive letter is looked at).
	SeedDevices []string
}
