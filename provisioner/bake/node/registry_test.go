// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package node

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
)

// The hosts.toml goldens: the registry's upstream as server (Docker Hub's
// API host for docker.io, none for _default), each mirror a host trusted
// to pull, and to resolve tags when its answers are authenticated (https
// without skip_verify) or allow_resolve is set.
func TestHostsTOMLGolden(t *testing.T) {
	for name, c := range map[string]struct {
		m  RegistryHost
		ca string
	}{
		"one-mirror":      {RegistryHost{Registry: "registry.k8s.io", Endpoints: []string{"https://mirror.example.com"}}, ""},
		"two-mirrors-ca":  {RegistryHost{Registry: "docker.io", Endpoints: []string{"https://mirror-a.example.com", "http://10.0.2.2:5000/v2/dockerhub"}, OverridePath: true}, "/etc/containerd/certs.d/docker.io/ca.crt"},
		"skip-verify":     {RegistryHost{Registry: "registry.example.com:5000", Endpoints: []string{"https://mirror.example.com:8443"}, SkipVerify: true}, ""},
		"default":         {RegistryHost{Registry: "_default", Endpoints: []string{"https://all.example.com"}}, ""},
		"allow-resolve":   {RegistryHost{Registry: "registry.kubenode.test", Endpoints: []string{"http://10.0.2.2:5000"}, AllowResolve: true}, ""},
		"windows-ca-path": {RegistryHost{Registry: "ghcr.io", Endpoints: []string{"https://mirror.example.com"}}, `C:\Program Files\containerd\certs.d\ghcr.io\ca.crt`},
	} {
		t.Run(name, func(t *testing.T) { golden.Assert(t, "registry/"+name+".toml", []byte(HostsTOML(c.m, c.ca))) })
	}
}

func TestHostsDir(t *testing.T) {
	for in, want := range map[string]string{"docker.io": "docker.io", "_default": "_default", "registry.example.com:5000": "registry.example.com_5000_", "[::1]:5000": "[::1]_5000_", "[::1]": "[::1]"} {
		assert.Equal(t, want, HostsDir(in), in)
	}
}
