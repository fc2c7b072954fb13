// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kubenode/packer-plugin-kubenode/internal/fuzzkit"
)

// fuzzDisc lays a fuzz input out as a disc image from the volume
// descriptors on, each sector its next 512 bytes and zeros (a seed disc
// records nothing the reader needs past them).
func fuzzDisc(data []byte) fuzzkit.Image {
	return fuzzkit.Image{Data: data, First: firstVolumeSector, SectorSize: isoSectorSize, Kept: 512}
}

func compactDisc(img []byte) []byte {
	return fuzzkit.Compact(img, firstVolumeSector, isoSectorSize, 512)
}

// FuzzReadISOFile: whatever disc is labelled for the joiner, reading its
// file returns, in bounded time, the file within the limit or an error.
func FuzzReadISOFile(f *testing.F) {
	seed := func(img []byte) { f.Add(compactDisc(img)) }
	var buf bytes.Buffer
	if err := WriteISO(&buf, Disc{Label: "KUBENODE_JOIN", Files: []File{{Name: "joiner.yaml", Data: []byte("token: abc\n")}}}); err != nil {
		f.Fatal(err)
	}
	if _, err := ReadISOFile(fuzzDisc(compactDisc(buf.Bytes())), "joiner.yaml", 64<<10); err != nil {
		f.Fatal(err)
	}
	seed(buf.Bytes())
	seed(joinDisc(f, func(_ uint32, recs [][]byte) [][]byte {
		recs[0] = withSystemUse(recs[0], append(bytes.Clone(suspSP), suspCE(0, 0, 0xFFFFFFFF)...))
		return recs
	}))
	seed(joinDisc(f, func(_ uint32, recs [][]byte) [][]byte { return recs[:1] }))

	const limit = 64 << 10
	f.Fuzz(func(t *testing.T, tail []byte) {
		fuzzkit.Within(t, fuzzkit.PerInput, func() error {
			data, err := ReadISOFile(fuzzDisc(tail), "joiner.yaml", limit)
			if err == nil && len(data) > limit {
				return fmt.Errorf("read %d bytes, over the limit of %d", len(data), limit)
			}
			return nil
		})
	})
}
