package config

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
	// SeedDevices are glob patterns of block devices that may hold the join
	// seed disc (Linux; on Windows every drive letter is looked at).
	SeedDevices []string
}
