// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package registrytest reads an artifact's HCP Packer metadata the way
// Packer core does: through the plugin RPC, then decoded into registry
// images. Tests use it to see what a build would publish.
package registrytest

import (
	"net"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/packer/registry/image"
	"github.com/hashicorp/packer-plugin-sdk/rpc"
	"github.com/mitchellh/mapstructure"
)

// Images serves a over the SDK's RPC, asks the remote copy for
// State(image.ArtifactStateURI) and decodes the answer as Packer core's
// HCP registry does (internal/hcp/registry, Bucket.doCompleteBuild). It
// returns nil when the artifact reports nothing, which Packer would answer
// with "No HCP Packer-compatible artifacts were found for the build".
func Images(t testing.TB, a packer.Artifact) []image.Image {
	t.Helper()
	clientConn, serverConn := net.Pipe()
	server, err := rpc.NewServer(serverConn)
	if err != nil {
		t.Fatalf("rpc server: %v", err)
	}
	defer server.Close()
	if err := server.RegisterArtifact(a); err != nil {
		t.Fatalf("registering the artifact: %v", err)
	}
	go server.Serve()
	client, err := rpc.NewClient(clientConn)
	if err != nil {
		t.Fatalf("rpc client: %v", err)
	}
	defer client.Close()

	state := client.Artifact().State(image.ArtifactStateURI)
	if state == nil {
		return nil
	}
	var images []image.Image
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{Result: &images, WeaklyTypedInput: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(state); err != nil {
		t.Fatalf("Packer could not decode the artifact's HCP metadata %#v: %v", state, err)
	}
	for i := range images {
		if err := images[i].Validate(); err != nil {
			t.Errorf("image %d (%s): %v", i, images[i].String(), err)
		}
	}
	return images
}
