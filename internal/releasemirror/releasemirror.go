// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package releasemirror serves, on 127.0.0.1, the release files
// kubenode-bake downloads (Kubernetes, containerd, runc, crictl, the CNI
// plugins) in their upstream layout and checksum format, for the bake's
// download_mirrors, and on request what scripts/setup.sh downloads.
// scripts/release-files.sh makes the files and says which came from
// where: upstream's release downloads where this machine reaches them,
// else builds of the same versions.
package releasemirror

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// Versions are the releases a Mirror serves.
type Versions struct {
	Kubernetes string // vX.Y.Z, the binaries in the directory given to Serve
	Containerd string // X.Y.Z
	Runc       string // vX.Y.Z
	Crictl     string // vX.Y.Z
	// CNIPlugins (vX.Y.Z) is the CNI plugins release to download; when it
	// cannot be (or is empty), Debian's package is served under its own
	// version, which Mirror.CNIPlugins says.
	CNIPlugins string
}

// For is the set the bake installs with kubernetes and containerd: the
// runc containerd's release ships with, the crictl of that Kubernetes
// minor and the default CNI plugins (the version table's).
func For(kubernetes, containerd string) (Versions, error) {
	ctrd, err := versions.LookupContainerd(containerd)
	if err != nil {
		return Versions{}, err
	}
	k8s, err := versions.LookupKubernetes(kubernetes)
	if err != nil {
		return Versions{}, err
	}
	crictl, err := versions.LookupCrictl("", k8s)
	if err != nil {
		return Versions{}, err
	}
	return Versions{Kubernetes: kubernetes, Containerd: containerd, Runc: ctrd.RuncVersion, Crictl: crictl.Version,
		CNIPlugins: versions.Defaults.CNIPlugins}, nil
}

// Mirror is a running mirror.
type Mirror struct {
	// Mirrors is kubenode-bake's download_mirrors for it.
	Mirrors map[string]string
	// URL serves each upstream host's files under the host's name
	// (URL/dl.k8s.io/release/...): scripts/setup.sh's
	// KUBENODE_RELEASE_MIRROR.
	URL string
	// CNIPlugins is the CNI plugins version it serves.
	CNIPlugins string
	srv        *http.Server
	dir        string
}

// Serve writes the release files into a new temporary directory (the
// builds behind them are cached by version) with root's
// scripts/release-files.sh and serves them on 127.0.0.1 until Close.
// Its output goes to log.
func Serve(root, kubernetesDir string, v Versions, log *os.File) (*Mirror, error) {
	return serve(root, kubernetesDir, v, log, "")
}

// ServeSetup is Serve with, besides, what scripts/setup.sh and
// scripts/k8s-binaries.sh download: the zip of the packer binary (at the
// version it reports) with its SHA256SUMS as releases.hashicorp.com lays
// them out, the control plane binaries of kubernetesDir as dl.k8s.io does,
// and its etcd as etcd's GitHub release tarball with its SHA256SUMS.
func ServeSetup(root, kubernetesDir, packer string, v Versions, log *os.File) (*Mirror, error) {
	return serve(root, kubernetesDir, v, log, packer)
}

func serve(root, kubernetesDir string, v Versions, log *os.File, packer string) (*Mirror, error) {
	dir, err := os.MkdirTemp("", "kubenode-releases-")
	if err != nil {
		return nil, err
	}
	args := []string{filepath.Join(root, "scripts", "release-files.sh"), dir, kubernetesDir, v.Kubernetes, v.Containerd, v.Runc, v.Crictl}
	if v.CNIPlugins != "" {
		args = append(args, v.CNIPlugins)
	}
	cmd := exec.Command("bash", args...)
	if packer != "" {
		cmd.Env = append(os.Environ(), "RELEASE_FILES_SETUP="+packer)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if log != nil {
		cmd.Stderr = log
	}
	out, err := cmd.Output()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("scripts/release-files.sh: %w\n%s", err, stderr.String())
	}
	cni := strings.TrimSpace(string(out))
	if cni == "" {
		os.RemoveAll(dir)
		return nil, errors.New("scripts/release-files.sh printed no CNI plugins version")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir))}
	go func() { _ = srv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	return &Mirror{
		Mirrors: map[string]string{
			"https://dl.k8s.io":  url + "/dl.k8s.io",
			"https://github.com": url + "/github.com",
		},
		URL:        url,
		CNIPlugins: cni, srv: srv, dir: dir,
	}, nil
}

// Close stops the server and removes the files.
func (m *Mirror) Close() error {
	err := m.srv.Close()
	if rerr := os.RemoveAll(m.dir); err == nil {
		err = rerr
	}
	return err
}
