// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package fuzzkit

import (
	"errors"
	"io"
)

// Image is a disc image made from a short fuzz input. Disc formats put
// their structures at fixed sectors (ISO 9660 from sector 16, UDF's
// anchor at 256) and use the first few hundred bytes of each: a whole
// image would be mostly zeros, slow to mutate and to minimize. So the
// sectors before First read as zeros, and from First on each sector of
// SectorSize bytes is its next Kept bytes of Data followed by zeros, until
// Data ends (io.EOF).
type Image struct {
	Data       []byte
	First      int64 // sectors of zeros before Data
	SectorSize int64
	Kept       int64 // bytes of Data per sector
}

// ReadAt reads the image, as io.ReaderAt.
func (m Image) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	n := 0
	for n < len(p) {
		o := off + int64(n)
		s, in := o/m.SectorSize, o%m.SectorSize
		k := int(min(int64(len(p)-n), m.SectorSize-in))
		dst := p[n : n+k]
		clear(dst)
		if s >= m.First {
			base := (s - m.First) * m.Kept
			if base >= int64(len(m.Data)) {
				return n, io.EOF
			}
			if in < m.Kept {
				copy(dst, m.Data[base+in:min(base+m.Kept, int64(len(m.Data)))])
			}
		}
		n += k
	}
	return n, nil
}

// Compact is the input Image{Data: Compact(img, ...)} reads as img, for the
// sectors from first on, if img has nothing past Kept in any of them.
func Compact(img []byte, first, sectorSize, kept int64) []byte {
	var out []byte
	for s := first * sectorSize; s < int64(len(img)); s += sectorSize {
		out = append(out, img[s:min(s+kept, int64(len(img)))]...)
	}
	return out
}
