// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package skew holds the version skew rules between a node's kubelet and
// kubeadm and the control plane it joins. `joiner join` enforces them on
// the node at first boot; `joiner token` and `joiner doctor` check them
// earlier, against the image's kubenode-manifest.json, before anything
// boots.
package skew

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
)

// Rule is how far a component's minor version may lie from the API
// server's: within [server+Lo, server+Hi], same major.
type Rule struct {
	Component string
	Lo, Hi    int
}

// The rules of Kubernetes' version skew policy for a joining node: a
// kubelet may be up to three minors older than the API server, never
// newer; kubeadm join must be the control plane's minor or one newer.
var (
	Kubelet = Rule{Component: "kubelet", Lo: -3, Hi: 0}
	Kubeadm = Rule{Component: "kubeadm", Lo: 0, Hi: 1}
)

// Check checks the component's version have against the API server's.
// A nil server is not checked (have is still parsed).
func (r Rule) Check(have string, server *version.Info) error {
	v, err := utilversion.ParseGeneric(have)
	if err != nil {
		return fmt.Errorf("%s reports version %q: %w", r.Component, have, err)
	}
	if server == nil {
		return nil
	}
	s, err := utilversion.ParseGeneric(server.GitVersion)
	if err != nil {
		return fmt.Errorf("the API server reports version %q: %w", server.GitVersion, err)
	}
	d := int(v.Minor()) - int(s.Minor())
	if v.Major() != s.Major() || d < r.Lo || d > r.Hi {
		return fmt.Errorf("%s %s cannot join a %s control plane (supported: minor versions %+d to %+d of it); bake the node with a matching kubernetes_version",
			r.Component, have, server.GitVersion, r.Lo, r.Hi)
	}
	return nil
}

// CheckImage checks an image whose kubelet and kubeadm are both at
// kubernetes (the manifest's baked.kubernetes) against the API server:
// every rule that fails is reported.
func CheckImage(kubernetes string, server *version.Info) error {
	var errs []error
	for _, r := range []Rule{Kubelet, Kubeadm} {
		if err := r.Check(kubernetes, server); err != nil {
			errs = append(errs, fmt.Errorf("the image's %w", err))
		}
	}
	return errors.Join(errs...)
}

// MaxManifestSize bounds kubenode-manifest.json; a real one is a few
// kilobytes.
const MaxManifestSize = 1 << 20

// Image is what the joiner checks of an image, from its manifest.
type Image struct {
	// Kubernetes is its kubelet's and kubeadm's version (baked.kubernetes).
	Kubernetes string
	// OS is os.family: linux, windows, or unknown (or empty) when the
	// builder did not know.
	OS string
}

// ReadImageManifest returns the Kubernetes version (baked.kubernetes) of
// the image kubenode-export described in the manifest at path.
func ReadImageManifest(path string) (string, error) {
	im, err := ReadImage(path)
	return im.Kubernetes, err
}

// ReadImage reads the manifest kubenode-export wrote at path; it fails
// when the manifest names no valid baked.kubernetes.
func ReadImage(path string) (Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return Image{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestSize+1))
	if err != nil {
		return Image{}, err
	}
	if len(data) > MaxManifestSize {
		return Image{}, fmt.Errorf("larger than %d bytes: not a kubenode-manifest.json", MaxManifestSize)
	}
	var m struct {
		OS struct {
			Family string `json:"family"`
		} `json:"os"`
		Baked *baked.Facts `json:"baked"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return Image{}, fmt.Errorf("not a kubenode-manifest.json: %w", err)
	}
	if dec.More() {
		return Image{}, errors.New("not a kubenode-manifest.json: data after the JSON object")
	}
	if m.Baked == nil || m.Baked.Kubernetes == "" {
		return Image{}, errors.New("names no baked.kubernetes: the image was not baked by kubenode-bake, so it holds no kubelet or kubeadm to check")
	}
	if _, err := utilversion.ParseGeneric(m.Baked.Kubernetes); err != nil {
		return Image{}, fmt.Errorf("baked.kubernetes %q: %w", m.Baked.Kubernetes, err)
	}
	return Image{Kubernetes: m.Baked.Kubernetes, OS: m.OS.Family}, nil
}
