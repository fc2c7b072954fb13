// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package node

import (
	"fmt"
	"strings"
)

// The self-check is the bake's last look at the guest, after everything is
// installed and before generalize (Linux) or cleanup and sysprep (Windows)
// run: it checks what a node needs at its first boot, collects every
// problem, prints each as "problem: ...", and exits 1 when there is one,
// which fails the build with the list (SelfCheckError). What it checks is
// rendered from a SelfCheck; the scripts never print "changed: ", so a
// second bake still reports 0 changes.

// SelfCheck is what the self-check expects of the baked guest.
type SelfCheck struct {
	// KubernetesVersion is what kubelet, kubeadm and kubectl report.
	KubernetesVersion string
	// ContainerdVersion is what containerd reports (X.Y.Z); empty: not
	// compared (the distribution's containerd).
	ContainerdVersion string
	// CrictlVersion is the installed crictl's release: `crictl info` must
	// answer over containerd's socket. Empty: crictl is not installed and
	// `ctr version` must answer instead.
	CrictlVersion string
	// Joiner: the joiner's service is installed (Linux: enabled).
	Joiner bool
	// ClusterAPI: the image is for Cluster API's kubeadm bootstrap
	// (Linux): cloud-init with Jinja and CloudInitDatasources, no joiner,
	// kubeadm, kubelet and kubectl in /usr/bin, containerd's socket where
	// kubeadm looks, sshd enabled.
	ClusterAPI bool
	// CloudInitDatasources is the datasource_list the bake wrote
	// (ClusterAPI only).
	CloudInitDatasources []string
	// BridgeCNI: the bridge config's plugins (bridge, host-local, loopback)
	// are in the CNI bin directory (Linux, cni = "bridge").
	BridgeCNI bool
	// Images are image references that must be in containerd's k8s.io
	// namespace (the images preloaded into the image), as `ctr -n k8s.io
	// images ls -q` lists them; see NormalizeImageRef.
	Images []string
	// KubeadmImages: every image `kubeadm config images list` names for
	// KubernetesVersion is in containerd's k8s.io namespace, pinned
	// (Linux: kubeadm_images).
	KubeadmImages bool
}

// SelfCheckError is a failed self-check: every problem it found.
type SelfCheckError struct {
	Problems []string
	Err      error
}

func (e *SelfCheckError) Error() string {
	return fmt.Sprintf("self-check: the baked guest is not ready to become a node; %d problems:\n  - %s\n"+
		"fix each (the steps above show what they installed), or the configuration that asked for it, and build again",
		len(e.Problems), strings.Join(e.Problems, "\n  - "))
}

func (e *SelfCheckError) Unwrap() error { return e.Err }

// SelfCheckFailure turns the self-check step's failure into a
// SelfCheckError listing its problems; any other step's error is returned
// as it is.
func SelfCheckFailure(step, out string, err error) error {
	if err == nil || step != StepSelfCheck {
		return err
	}
	var problems []string
	for _, l := range LinesWith(out, "problem: ") {
		problems = append(problems, strings.TrimPrefix(l, "problem: "))
	}
	if len(problems) == 0 {
		return err
	}
	return &SelfCheckError{Problems: problems, Err: err}
}

// NormalizeImageRef writes a reference the way containerd names the image
// it pulled or imported: Docker Hub's domain and library/ added, and
// :latest when it has neither tag nor digest.
func NormalizeImageRef(ref string) string {
	name, rest := ref, ""
	if i := strings.Index(ref, "@"); i >= 0 {
		name, rest = ref[:i], ref[i:]
	}
	domain, path, ok := strings.Cut(name, "/")
	if !ok || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, path = "docker.io", name
	}
	if domain == "docker.io" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	if rest == "" && !strings.Contains(path[strings.LastIndex(path, "/")+1:], ":") {
		path += ":latest"
	}
	return domain + "/" + path + rest
}

// NormalizedImages is NormalizeImageRef of every reference.
func NormalizedImages(refs []string) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = NormalizeImageRef(r)
	}
	return out
}

// LinesWith returns the lines of out that start with one of the prefixes.
func LinesWith(out string, prefixes ...string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				lines = append(lines, l)
				break
			}
		}
	}
	return lines
}
