// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package ocilayout

import (
	"encoding/json"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A referrer is an OCI 1.1 artifact manifest: its artifactType, the empty
// config, its one blob titled, the subject it refers to; a layout lists it
// with its artifactType.
func TestReferrer(t *testing.T) {
	subject := v1.Descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json", Size: 527,
		Digest:      v1.Hash{Algorithm: "sha256", Hex: "5c50325231faa81f9cbbfa8ab3b49a094e7050f6ff786111e776df4b52893989"},
		Annotations: map[string]string{"io.containerd.image.name": "x"}}
	content := []byte(`{"spdxVersion": "SPDX-2.3"}`)
	r, err := Referrer(subject, "application/spdx+json", "node.spdx.json", content, time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	raw, err := r.RawManifest()
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	assert.Equal(t, "application/spdx+json", m["artifactType"])
	assert.Equal(t, map[string]any{"mediaType": "application/vnd.oci.empty.v1+json", "size": 2.0, "data": "e30=",
		"digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}, m["config"])
	assert.Equal(t, map[string]any{"mediaType": string(subject.MediaType), "size": 527.0, "digest": subject.Digest.String()}, m["subject"],
		"the subject is the image's manifest, without its index annotations")
	layers := m["layers"].([]any)
	require.Len(t, layers, 1)
	assert.Equal(t, "application/spdx+json", layers[0].(map[string]any)["mediaType"])
	assert.Equal(t, map[string]any{"org.opencontainers.image.title": "node.spdx.json"}, layers[0].(map[string]any)["annotations"])
	assert.Equal(t, map[string]any{"org.opencontainers.image.created": "2026-11-22T08:00:00Z"}, m["annotations"])

	p, err := layout.Write(t.TempDir(), empty.Index)
	require.NoError(t, err)
	require.NoError(t, p.AppendImage(r))
	idx, err := p.ImageIndex()
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	d, err := partial.Descriptor(r)
	require.NoError(t, err)
	assert.Equal(t, *d, im.Manifests[0])
	assert.Equal(t, "application/spdx+json", im.Manifests[0].ArtifactType)
	blob, err := p.Bytes(v1.Hash{Algorithm: "sha256", Hex: layerDigest(t, r)})
	require.NoError(t, err)
	assert.Equal(t, content, blob, "the blob is in the layout")
}

func layerDigest(t *testing.T, img v1.Image) string {
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	d, err := layers[0].Digest()
	require.NoError(t, err)
	return d.Hex
}
