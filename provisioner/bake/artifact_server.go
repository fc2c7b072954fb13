// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"fmt"

	"github.com/hashicorp/packer-plugin-sdk/multistep/commonsteps"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/deliver"
)

// builderHTTPIP is the builder's {{ .HTTPIP }} from the build's generated
// data, "" when the builder does not set it.
func builderHTTPIP(generated map[string]interface{}) string {
	ip, _ := generated["PackerHTTPIP"].(string)
	if ip == commonsteps.HttpIPNotImplemented {
		return ""
	}
	return ip
}

// artifactServer starts the server the guest downloads the artifacts from,
// or returns nil when they go through the communicator
// (artifact_delivery); the caller closes it.
func (c *Config) artifactServer(ui packersdk.Ui, generated map[string]interface{}, arts []versions.Artifact) (*deliver.Server, error) {
	if c.ArtifactDelivery == deliver.Communicator {
		return nil, nil
	}
	ip := c.ArtifactHTTPIP
	if ip == "" {
		ip = builderHTTPIP(generated)
	}
	if ip == "" {
		if c.ArtifactDelivery == deliver.HTTP {
			return nil, fmt.Errorf(`artifact_delivery: "http" needs the address at which the guest reaches this machine, and the builder does not say ({{ .HTTPIP }}): set artifact_http_ip, or use "communicator"`)
		}
		ui.Say("kubenode-bake: the builder does not say how the guest reaches this machine ({{ .HTTPIP }}), so the artifacts are uploaded through the communicator (artifact_http_ip serves them over HTTP)")
		return nil, nil
	}
	bind := c.ArtifactHTTPBindAddress
	if bind == "" {
		bind = deliver.BindAddress(ip)
	}
	srv, err := deliver.Start(bind, c.ArtifactHTTPPort, ip, arts)
	if err != nil {
		return nil, fmt.Errorf("artifact_delivery: serving the artifacts to the guest on %s (artifact_http_bind_address, artifact_http_port): %w", bind, err)
	}
	// Chosen by default: a guest that cannot reach the server gets them
	// through the communicator, as before there was a server.
	srv.Fallback = c.ArtifactDelivery == ""
	return srv, nil
}
