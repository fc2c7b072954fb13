// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package udf_test

import (
	"encoding/binary"
	"path"
	"sort"
	"strings"
)

// A UDF disc written here, block by block, so that tests and the fuzz
// target can damage exactly the structure they are about. Layout (absolute
// sectors): the anchor at 256, the volume descriptor sequence at 257-259
// (partition, logical volume, terminator), the partition from 260 with the
// file set descriptor in its block 0 and the root directory's entry in 1.

const (
	sector        = 2048
	anchorAt      = 256
	partitionAt   = 260
	wimHeaderSize = 208
)

// disc is a UDF disc being written: its partition's blocks, and the block
// of each path's file entry.
type disc struct {
	blocks  [][]byte
	entries map[string]uint32
}

func (d *disc) alloc(n int) uint32 {
	first := uint32(len(d.blocks))
	for i := 0; i < n; i++ {
		d.blocks = append(d.blocks, make([]byte, sector))
	}
	return first
}

// newDisc writes files (slash-separated paths) into a new disc.
func newDisc(files map[string]string) *disc {
	d := &disc{entries: map[string]uint32{}}
	d.alloc(2) // the file set descriptor and the root directory's entry
	fsd := d.blocks[0]
	binary.LittleEndian.PutUint32(fsd[400:], sector) // root ICB: block 1
	binary.LittleEndian.PutUint32(fsd[404:], 1)
	setTag(fsd, 256, 0)

	// Directories, deepest last, so that a parent lists its children.
	children := map[string][]string{"": nil}
	var names []string
	for p := range files {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		for dir, child := path.Dir(p), p; ; dir, child = path.Dir(dir), dir {
			if dir == "." {
				dir = ""
			}
			if !contains(children[dir], child) {
				children[dir] = append(children[dir], child)
			}
			if dir == "" {
				break
			}
		}
	}
	d.entries[""] = 1
	var write func(dir string)
	write = func(dir string) {
		var data []byte
		for _, child := range children[dir] {
			_, isDir := children[child] // every directory has a child
			entry := d.alloc(1)
			d.entries[child] = entry
			data = append(data, fid(path.Base(child), entry, isDir)...)
			if isDir {
				write(child)
			} else {
				d.putFile(entry, 5, []byte(files[child]))
			}
		}
		d.putFile(d.entries[dir], 4, data)
	}
	write("")
	return d
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// putFile records data in blocks of their own and writes the file entry
// (file type 4: directory, 5: file) at block entry.
func (d *disc) putFile(entry uint32, fileType byte, data []byte) {
	var ads []byte
	if len(data) > 0 {
		first := d.alloc((len(data) + sector - 1) / sector)
		for i := 0; i < len(data); i += sector {
			copy(d.blocks[first+uint32(i/sector)], data[i:])
		}
		ads = shortAD(0, uint32(len(data)), first)
	}
	d.setEntry(entry, fileType, uint64(len(data)), ads)
}

// setEntry writes a file entry with short allocation descriptors ads.
func (d *disc) setEntry(entry uint32, fileType byte, size uint64, ads []byte) {
	b := d.blocks[entry]
	clear(b)
	binary.LittleEndian.PutUint16(b[16+4:], 4) // ICB strategy 4
	b[16+11] = fileType
	binary.LittleEndian.PutUint64(b[56:], size)
	binary.LittleEndian.PutUint32(b[172:], uint32(len(ads)))
	copy(b[176:], ads)
	setTag(b, 261, entry)
}

// setAllocationExtent makes block an allocation extent descriptor holding
// ads, with tag identifier id (258 for a true one).
func (d *disc) setAllocationExtent(block uint32, id uint16, ads []byte) {
	b := d.blocks[block]
	clear(b)
	binary.LittleEndian.PutUint32(b[20:], uint32(len(ads)))
	copy(b[24:], ads)
	setTag(b, id, block)
}

// image is the whole disc image.
func (d *disc) image() []byte {
	img := make([]byte, (partitionAt+len(d.blocks))*sector)
	at := func(s int) []byte { return img[s*sector : (s+1)*sector] }

	anchor := at(anchorAt)
	binary.LittleEndian.PutUint32(anchor[16:], 3*sector) // main sequence: 3 sectors
	binary.LittleEndian.PutUint32(anchor[20:], anchorAt+1)
	setTag(anchor, 2, anchorAt)

	pd := at(anchorAt + 1)
	binary.LittleEndian.PutUint32(pd[188:], partitionAt)
	binary.LittleEndian.PutUint32(pd[192:], uint32(len(d.blocks)))
	setTag(pd, 5, anchorAt+1)

	lvd := at(anchorAt + 2)
	binary.LittleEndian.PutUint32(lvd[212:], sector)
	binary.LittleEndian.PutUint32(lvd[248:], sector) // file set descriptor: block 0
	binary.LittleEndian.PutUint32(lvd[264:], 6)
	binary.LittleEndian.PutUint32(lvd[268:], 1)
	copy(lvd[440:], []byte{1, 6, 1, 0, 0, 0}) // type 1 map of partition 0
	setTag(lvd, 6, anchorAt+2)

	setTag(at(anchorAt+3), 8, anchorAt+3)
	for i, b := range d.blocks {
		copy(at(partitionAt+i), b)
	}
	return img
}

// fid is a file identifier descriptor naming the entry at block icb.
func fid(name string, icb uint32, dir bool) []byte {
	id := append([]byte{8}, strings.ToUpper(name)...)
	b := make([]byte, (38+len(id)+3)&^3)
	if dir {
		b[18] = 1 << 1
	}
	b[19] = byte(len(id))
	binary.LittleEndian.PutUint32(b[20:], sector)
	binary.LittleEndian.PutUint32(b[24:], icb)
	copy(b[38:], id)
	setTag(b, 257, 0)
	return b
}

// shortAD is a short allocation descriptor: typ 0 recorded, 3 a
// continuation.
func shortAD(typ, length, block uint32) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint32(b, typ<<30|length)
	binary.LittleEndian.PutUint32(b[4:], block)
	return b
}

func setTag(b []byte, id uint16, location uint32) {
	binary.LittleEndian.PutUint16(b, id)
	binary.LittleEndian.PutUint16(b[2:], 2)
	binary.LittleEndian.PutUint32(b[12:], location)
	var sum byte
	for i := 0; i < 16; i++ {
		if i != 4 {
			sum += b[i]
		}
	}
	b[4] = sum
}

// wim is the start of a WIM file: its header and some bytes.
func wim() string {
	return "MSWIM\x00\x00\x00" + strings.Repeat("w", wimHeaderSize)
}
