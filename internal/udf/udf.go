// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package udf finds one file by path on a UDF disc image and reads it,
// without mounting anything. It implements only what that needs, for the
// read-only UDF 1.02 to 2.01 discs that Windows install media and
// genisoimage -udf / mkudffs produce: the anchor, the main volume descriptor
// sequence, type 1 partition maps, the file set descriptor, (extended) file
// entries with short, long or embedded allocation, and file identifier
// descriptors.
//
// Section numbers refer to ECMA-167 3rd edition ("3/10.2" is part 3,
// section 10.2) and to OSTA UDF 2.01 ("UDF 2.2.3"), both public.
package udf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
)

// sectorSize is the logical sector size of CD and DVD media. UDF's logical
// block size must equal it (UDF 2.2.4.2); other sizes are refused.
const sectorSize = 2048

// anchorSector is where the Anchor Volume Descriptor Pointer is always
// recorded (ECMA-167 3/8.4.2.1, UDF 2.2.3).
const anchorSector = 256

// Descriptor tag identifiers (ECMA-167 3/7.2.1, 4/7.2.1).
const (
	tagAnchor            = 2
	tagVolumePointer     = 3
	tagPartition         = 5
	tagLogicalVolume     = 6
	tagTerminating       = 8
	tagFileSet           = 256
	tagFileIdentifier    = 257
	tagAllocationExtent  = 258
	tagFileEntry         = 261
	tagExtendedFileEntry = 266
)

// Limits that keep a damaged or hostile image from making the reader loop
// or allocate without bound.
const (
	maxDescriptorSequence = 64      // sectors read of a volume descriptor sequence
	maxDirectorySize      = 8 << 20 // bytes of one directory
	maxExtents            = 1 << 16 // allocation descriptors of one file, continuations included
	maxPathDepth          = 64
)

// ErrNotUDF is returned by Open when the image has no UDF anchor: it is not
// a UDF disc (a plain ISO 9660 image, or not a disc image at all).
var ErrNotUDF = errors.New("no UDF file system (no anchor volume descriptor at sector 256)")

// ErrNotExist is returned (wrapped) by FS.Open when a path is not on the disc.
var ErrNotExist = errors.New("file does not exist")

// FS is an opened UDF file system.
type FS struct {
	r          io.ReaderAt
	partitions []uint32 // start sector of each partition reference number
	root       longAD
}

// ctxReader fails every read once ctx is done, so that a reader stuck on
// a slow or hostile image stops at Ctrl-C.
type ctxReader struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReader) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}

// Open reads the volume and file set descriptors of the UDF disc image r.
// Every read of r, by Open and later by the FS and its files, first checks
// ctx: once it is done they fail with its error.
func Open(ctx context.Context, r io.ReaderAt) (*FS, error) {
	r = ctxReader{ctx: ctx, r: r}
	// 3/10.2: the anchor points to the main volume descriptor sequence.
	anchor := make([]byte, sectorSize)
	if _, err := r.ReadAt(anchor, anchorSector*sectorSize); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrNotUDF
		}
		return nil, err
	}
	if id, ok := tagID(anchor, anchorSector); !ok || id != tagAnchor {
		return nil, ErrNotUDF
	}
	seqLen := binary.LittleEndian.Uint32(anchor[16:])
	seqLoc := binary.LittleEndian.Uint32(anchor[20:])

	// 3/8.4.2: walk the sequence for the partition and logical volume
	// descriptors.
	partStart := map[uint16]uint32{} // partition number -> start sector
	var lvd []byte
	buf := make([]byte, sectorSize)
	n := min(seqLen/sectorSize, maxDescriptorSequence)
	for i := uint32(0); i < n; i++ {
		sector := seqLoc + i
		if _, err := r.ReadAt(buf, int64(sector)*sectorSize); err != nil {
			return nil, fmt.Errorf("udf: volume descriptor sequence: %w", err)
		}
		id, ok := tagID(buf, sector)
		if !ok {
			return nil, fmt.Errorf("udf: damaged volume descriptor at sector %d", sector)
		}
		if id == tagTerminating {
			break
		}
		switch id {
		case tagPartition: // 3/10.5
			partStart[binary.LittleEndian.Uint16(buf[22:])] = binary.LittleEndian.Uint32(buf[188:])
		case tagLogicalVolume: // 3/10.6
			lvd = append([]byte(nil), buf...)
		case tagVolumePointer:
			return nil, errors.New("udf: continued volume descriptor sequences are not supported")
		}
	}
	if lvd == nil {
		return nil, errors.New("udf: no logical volume descriptor")
	}
	if bs := binary.LittleEndian.Uint32(lvd[212:]); bs != sectorSize {
		return nil, fmt.Errorf("udf: logical block size %d is not supported (only %d)", bs, sectorSize)
	}

	// 3/10.6.13 and 3/10.7: partition maps, in partition reference order.
	// Only type 1 maps (a physical partition) are read; type 2 maps are
	// UDF's virtual, sparable and metadata partitions (UDF 2.2.8-2.2.10),
	// which install media do not use.
	fs := &FS{r: r}
	mapsLen := binary.LittleEndian.Uint32(lvd[264:])
	count := binary.LittleEndian.Uint32(lvd[268:])
	maps := lvd[440:]
	if mapsLen > uint32(len(maps)) {
		return nil, errors.New("udf: partition maps do not fit the logical volume descriptor")
	}
	maps = maps[:mapsLen]
	for i := uint32(0); i < count; i++ {
		if len(maps) < 2 || int(maps[1]) > len(maps) || maps[1] < 2 {
			return nil, errors.New("udf: damaged partition map")
		}
		typ, l := maps[0], maps[1]
		if typ != 1 || l != 6 {
			return nil, fmt.Errorf("udf: partition map of type %d is not supported (only physical partitions, UDF 2.01 and older)", typ)
		}
		start, ok := partStart[binary.LittleEndian.Uint16(maps[4:])]
		if !ok {
			return nil, fmt.Errorf("udf: partition %d has no partition descriptor", binary.LittleEndian.Uint16(maps[4:]))
		}
		fs.partitions = append(fs.partitions, start)
		maps = maps[l:]
	}

	// UDF 2.2.4.4: the logical volume contents use holds the long_ad of the
	// file set descriptor (4/14.1), whose root directory ICB is at 400.
	fsd, err := fs.readBlock(parseLongAD(lvd[248:]))
	if err != nil {
		return nil, fmt.Errorf("udf: file set descriptor: %w", err)
	}
	if id, ok := tagID(fsd, 0); !ok || id != tagFileSet {
		return nil, errors.New("udf: no file set descriptor where the logical volume points")
	}
	fs.root = parseLongAD(fsd[400:])
	return fs, nil
}

// File is a regular file on the disc.
type File struct {
	fs      *FS
	size    int64
	extents []extent // in file order; their lengths add up to at least size
	data    []byte   // embedded in the file entry (4/14.6.8), if so
}

// Size is the file's length in bytes.
func (f *File) Size() int64 { return f.size }

// ReadAt reads from the file at off, as io.ReaderAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("udf: negative offset")
	}
	if off >= f.size {
		return 0, io.EOF
	}
	want := len(p)
	if rest := f.size - off; int64(want) > rest {
		want = int(rest)
	}
	if f.data != nil {
		n := copy(p[:want], f.data[off:])
		return n, eofIf(n < len(p))
	}
	n := 0
	pos := int64(0) // file offset of the current extent
	for _, e := range f.extents {
		if n == want {
			break
		}
		end := pos + int64(e.length)
		if off+int64(n) < end {
			in := off + int64(n) - pos
			chunk := min(int64(want-n), int64(e.length)-in)
			dst := p[n : n+int(chunk)]
			if e.sparse {
				clear(dst) // 4/14.14.1.1: not recorded reads as zeros
			} else if _, err := f.fs.r.ReadAt(dst, e.offset+in); err != nil {
				return n, err
			}
			n += int(chunk)
		}
		pos = end
	}
	if n < want {
		return n, errors.New("udf: file is longer than its extents")
	}
	return n, eofIf(n < len(p))
}

func eofIf(short bool) error {
	if short {
		return io.EOF
	}
	return nil
}

// Open finds the regular file at path ("sources/install.wim": slash
// separated, from the root). Names compare without regard to case, as
// Windows does.
func (fs *FS) Open(path string) (*File, error) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) > maxPathDepth {
		return nil, fmt.Errorf("udf: %s: path too deep", path)
	}
	icb := fs.root
	for i, name := range parts {
		dir, err := fs.entry(icb)
		if err != nil {
			return nil, fmt.Errorf("udf: %s: %w", strings.Join(parts[:i], "/"), err)
		}
		if !dir.isDir {
			return nil, fmt.Errorf("udf: %s: not a directory", strings.Join(parts[:i], "/"))
		}
		next, isDir, err := fs.lookup(dir.file, name)
		if err != nil {
			return nil, fmt.Errorf("udf: %s: %w", strings.Join(parts[:i+1], "/"), err)
		}
		if isDir != (i < len(parts)-1) {
			if isDir {
				return nil, fmt.Errorf("udf: %s: is a directory", path)
			}
			return nil, fmt.Errorf("udf: %s: not a directory", strings.Join(parts[:i+1], "/"))
		}
		icb = next
	}
	e, err := fs.entry(icb)
	if err != nil {
		return nil, fmt.Errorf("udf: %s: %w", path, err)
	}
	return e.file, nil
}

// lookup reads the directory dir's file identifier descriptors (4/14.4)
// and returns the ICB of the entry called name.
func (fs *FS) lookup(dir *File, name string) (icb longAD, isDir bool, err error) {
	if dir.size > maxDirectorySize {
		return longAD{}, false, fmt.Errorf("directory of %d bytes is larger than the %d allowed", dir.size, maxDirectorySize)
	}
	b := make([]byte, dir.size)
	if _, err := dir.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return longAD{}, false, err
	}
	for len(b) >= 38 {
		if id, ok := tagID(b, 0); !ok || id != tagFileIdentifier {
			return longAD{}, false, errors.New("damaged file identifier descriptor")
		}
		chars := b[18]
		lfi := int(b[19])
		liu := int(binary.LittleEndian.Uint16(b[36:]))
		// 4/14.4: the descriptor is padded to a multiple of 4 bytes.
		size := (38 + liu + lfi + 3) &^ 3
		if size > len(b) {
			return longAD{}, false, errors.New("damaged file identifier descriptor")
		}
		const (
			charDirectory = 1 << 1 // 4/14.4.3
			charDeleted   = 1 << 2
			charParent    = 1 << 3
		)
		if chars&(charDeleted|charParent) == 0 && strings.EqualFold(decodeCS0(b[38+liu:38+liu+lfi]), name) {
			return parseLongAD(b[20:]), chars&charDirectory != 0, nil
		}
		b = b[size:]
	}
	return longAD{}, false, ErrNotExist
}

// fileEntry is a file entry or extended file entry, read.
type fileEntry struct {
	isDir bool
	file  *File
}

// entry reads the (extended) file entry at icb (4/14.9, 4/14.17) and its
// allocation descriptors.
func (fs *FS) entry(icb longAD) (*fileEntry, error) {
	b, err := fs.readBlock(icb)
	if err != nil {
		return nil, err
	}
	id, ok := tagID(b, 0)
	var lenEA, lenAD, adStart int
	switch {
	case ok && id == tagFileEntry:
		lenEA = int(binary.LittleEndian.Uint32(b[168:]))
		lenAD = int(binary.LittleEndian.Uint32(b[172:]))
		adStart = 176 + lenEA
	case ok && id == tagExtendedFileEntry:
		lenEA = int(binary.LittleEndian.Uint32(b[208:]))
		lenAD = int(binary.LittleEndian.Uint32(b[212:]))
		adStart = 216 + lenEA
	default:
		return nil, errors.New("no file entry where the directory points")
	}
	if lenEA < 0 || lenAD < 0 || adStart+lenAD > len(b) {
		return nil, errors.New("damaged file entry")
	}
	// ICB tag (4/14.6): strategy 4 is the only one UDF allows on
	// read-only media (UDF 2.3.5.1); file type 4 is a directory, 5 a file.
	if strategy := binary.LittleEndian.Uint16(b[16+4:]); strategy != 4 {
		return nil, fmt.Errorf("ICB strategy %d is not supported", strategy)
	}
	fileType := b[16+11]
	if fileType != 4 && fileType != 5 {
		return nil, fmt.Errorf("file type %d is neither a directory nor a regular file", fileType)
	}
	size := int64(binary.LittleEndian.Uint64(b[56:]))
	if size < 0 {
		return nil, errors.New("damaged file entry")
	}
	f := &File{fs: fs, size: size}
	ads := b[adStart : adStart+lenAD]
	switch flags := binary.LittleEndian.Uint16(b[16+18:]) & 7; flags {
	case 0, 1: // 4/14.14.1 short_ad, 4/14.14.2 long_ad
		f.extents, err = fs.extents(ads, flags == 1, icb.partition)
		if err != nil {
			return nil, err
		}
	case 3: // 4/14.6.8: the data is embedded where the descriptors would be
		if size > int64(len(ads)) {
			return nil, errors.New("damaged file entry")
		}
		f.data = ads[:size]
	default:
		return nil, fmt.Errorf("allocation descriptor type %d is not supported", flags)
	}
	return &fileEntry{isDir: fileType == 4, file: f}, nil
}

// extent is a run of the file: length bytes at byte offset of the image,
// or zeros (sparse).
type extent struct {
	offset int64
	length uint32
	sparse bool
}

// extents reads short_ads (partition: the entry's) or long_ads, following
// continuation extents (type 3, 4/12.1).
func (fs *FS) extents(ads []byte, long bool, partition uint16) ([]extent, error) {
	var out []extent
	size := 8
	if long {
		size = 16
	}
	// Continuations count against maxExtents too, and each block may hold
	// the continuation once: one that points back at itself (or any cycle)
	// would otherwise be followed for ever, since it adds no extent, and
	// even bounded by maxExtents a cycle costs thousands of block reads.
	descriptors := 0
	visited := map[longAD]bool{}
	for len(ads) >= size {
		if descriptors++; descriptors > maxExtents {
			return nil, errors.New("too many allocation descriptors")
		}
		raw := binary.LittleEndian.Uint32(ads)
		typ, length := raw>>30, raw&(1<<30-1) // 4/14.14.1.1
		if length == 0 {
			break // 4/12.1: a zero length ends the descriptors
		}
		ad := longAD{block: binary.LittleEndian.Uint32(ads[4:]), partition: partition}
		if long {
			ad = parseLongAD(ads)
		}
		ad.length = length
		if typ == 3 {
			at := longAD{block: ad.block, partition: ad.partition}
			if visited[at] {
				return nil, errors.New("allocation descriptors continue in a loop")
			}
			visited[at] = true
			next, err := fs.readBlock(ad)
			if err != nil {
				return nil, err
			}
			// 4/14.5 allocation extent descriptor: 24 bytes, then descriptors.
			if id, ok := tagID(next, 0); !ok || id != tagAllocationExtent {
				return nil, errors.New("no allocation extent descriptor where a continuation points")
			}
			l := int(binary.LittleEndian.Uint32(next[20:]))
			if l < 0 || 24+l > len(next) {
				return nil, errors.New("damaged allocation extent descriptor")
			}
			ads = next[24 : 24+l]
			continue
		}
		offset, err := fs.offset(ad)
		if err != nil {
			return nil, err
		}
		out = append(out, extent{offset: offset, length: length, sparse: typ != 0})
		ads = ads[size:]
	}
	return out, nil
}

// longAD is a long allocation descriptor (4/14.14.2): an extent given by
// logical block number within a partition reference number.
type longAD struct {
	length    uint32
	block     uint32
	partition uint16
}

func parseLongAD(b []byte) longAD {
	return longAD{
		length:    binary.LittleEndian.Uint32(b) & (1<<30 - 1),
		block:     binary.LittleEndian.Uint32(b[4:]),
		partition: binary.LittleEndian.Uint16(b[8:]),
	}
}

// offset is the byte offset in the image of the extent's first block.
func (fs *FS) offset(ad longAD) (int64, error) {
	if int(ad.partition) >= len(fs.partitions) {
		return 0, fmt.Errorf("partition reference %d does not exist", ad.partition)
	}
	return (int64(fs.partitions[ad.partition]) + int64(ad.block)) * sectorSize, nil
}

// readBlock reads the one logical block at ad.
func (fs *FS) readBlock(ad longAD) ([]byte, error) {
	off, err := fs.offset(ad)
	if err != nil {
		return nil, err
	}
	b := make([]byte, sectorSize)
	if _, err := fs.r.ReadAt(b, off); err != nil {
		return nil, err
	}
	return b, nil
}

// tagID checks a descriptor tag (3/7.2): its checksum, and its recorded
// location when location is not 0 (locations of descriptors inside a
// partition are relative to it, so those are not compared).
func tagID(b []byte, location uint32) (uint16, bool) {
	if len(b) < 16 {
		return 0, false
	}
	var sum byte
	for i := 0; i < 16; i++ {
		if i != 4 {
			sum += b[i]
		}
	}
	if sum != b[4] {
		return 0, false
	}
	if location != 0 && binary.LittleEndian.Uint32(b[12:]) != location {
		return 0, false
	}
	return binary.LittleEndian.Uint16(b), true
}

// decodeCS0 reads an OSTA compressed Unicode name (UDF 2.1.1, 2.1.3): a
// compression ID of 8 (one byte per character) or 16 (two bytes, big
// endian), then the characters.
func decodeCS0(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	switch b[0] {
	case 8:
		r := make([]rune, len(b)-1)
		for i, c := range b[1:] {
			r[i] = rune(c)
		}
		return string(r)
	case 16:
		u := make([]uint16, (len(b)-1)/2)
		for i := range u {
			u[i] = binary.BigEndian.Uint16(b[1+2*i:])
		}
		return string(utf16.Decode(u))
	}
	return ""
}
