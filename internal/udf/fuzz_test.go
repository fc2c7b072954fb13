// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package udf_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kubenode/packer-plugin-kubenode/internal/fuzzkit"
	"github.com/kubenode/packer-plugin-kubenode/internal/udf"
)

// fuzzDisc lays a fuzz input out as a disc image from the anchor on, each
// sector its next 512 bytes and zeros (everything these discs record lies
// in the first 512 bytes of its sector).
func fuzzDisc(data []byte) fuzzkit.Image {
	return fuzzkit.Image{Data: data, First: anchorAt, SectorSize: sector, Kept: 512}
}

// FuzzUDFOpen: whatever the disc, the edition check's reads (open the disc,
// find the install image, read its header and its end) return, in bounded
// time, without a panic.
func FuzzUDFOpen(f *testing.F) {
	seed := func(d *disc) { f.Add(fuzzkit.Compact(d.image(), anchorAt, sector, 512)) }
	plain := newDisc(map[string]string{"sources/install.wim": wim(), "setup.exe": "MZ"})
	if fs, err := udf.Open(context.Background(), fuzzDisc(fuzzkit.Compact(plain.image(), anchorAt, sector, 512))); err != nil {
		f.Fatal(err)
	} else if _, err := fs.Open("sources/install.wim"); err != nil {
		f.Fatal(err)
	}
	seed(plain)
	looped := newDisc(map[string]string{"sources/install.wim": wim()})
	aed := looped.alloc(1)
	looped.setAllocationExtent(aed, 258, shortAD(3, sector, aed))
	looped.setEntry(looped.entries["sources/install.wim"], 5, 1<<40, shortAD(3, sector, aed))
	seed(looped)
	chained := newDisc(map[string]string{"sources/install.wim": wim()})
	aed = chained.alloc(1)
	chained.setAllocationExtent(aed, 258, append(shortAD(0, sector, 0), shortAD(1, 1<<20, 0)...))
	chained.setEntry(chained.entries["sources/install.wim"], 5, sector+1<<20, shortAD(3, sector, aed))
	seed(chained)

	f.Fuzz(func(t *testing.T, tail []byte) {
		fuzzkit.Within(t, fuzzkit.PerInput, func() error {
			fs, err := udf.Open(context.Background(), fuzzDisc(tail))
			if err != nil {
				return nil
			}
			file, err := fs.Open("sources/install.wim")
			if err != nil {
				return nil
			}
			buf := make([]byte, 4096)
			if n, _ := file.ReadAt(buf, 0); int64(n) > file.Size() {
				return fmt.Errorf("read %d bytes of a %d-byte file", n, file.Size())
			}
			if file.Size() > int64(len(buf)) {
				file.ReadAt(buf, file.Size()-int64(len(buf)))
			}
			return nil
		})
	})
}
