// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kdomanski/iso9660"
)

// Volume labels the install tooling looks for.
const (
	// LabelCloudInit is the NoCloud seed label cloud-init searches for.
	LabelCloudInit = "cidata"
	// LabelKickstart is the label Anaconda searches for ks.cfg (OEMDRV).
	LabelKickstart = "OEMDRV"
)

// Limits of the ISO 9660 primary names the writer produces. The writer keeps
// names within 30 characters including the ";1" version suffix.
const (
	maxFileNameLen = 28
	maxExtLen      = 8
	maxDirNameLen  = 31
	maxDirDepth    = 7
	maxLabelLen    = 32
	maxFileSize    = 1<<32 - 1
)

// File is one file of a seed disc. Name is a slash-separated path inside the
// disc; the disc stores it in lower case (Linux and Windows both find it:
// Linux's isofs shows primary names in lower case, Windows' CDFS compares
// case-insensitively).
type File struct {
	Name string
	Data []byte
}

// Disc is a seed disc: a volume label and its files.
type Disc struct {
	Label string
	Files []File
	// Time is recorded as the volume's creation time. The zero value records
	// "not specified", which keeps the bytes the same from run to run.
	Time time.Time
}

// Validate checks the label and every name against what the disc can carry
// unchanged, and reports every problem at once.
func (d Disc) Validate() error {
	p := &problems{}
	checkLabel(p, d.Label)
	seen := map[string]string{} // lower-case path -> name as given
	isDir := map[string]bool{}  // lower-case dir path
	isFile := map[string]bool{} // lower-case file path
	if len(d.Files) == 0 {
		p.add("files", "a seed disc needs at least one file")
	}
	for i, f := range d.Files {
		field := fmt.Sprintf("files[%d]", i)
		if !checkDiscPath(p, field, f.Name) {
			continue
		}
		if int64(len(f.Data)) > maxFileSize {
			p.add(field, "%q is larger than 4 GiB, which ISO 9660 cannot hold", f.Name)
		}
		low := strings.ToLower(f.Name)
		if prev, ok := seen[low]; ok {
			p.add(field, "%q and %q are the same name on the disc, which stores names in lower case", prev, f.Name)
			continue
		}
		seen[low] = f.Name
		isFile[low] = true
		for dir := path.Dir(low); dir != "."; dir = path.Dir(dir) {
			isDir[dir] = true
		}
	}
	for low := range isFile {
		if isDir[low] {
			p.add("files", "%q is both a file and a directory", seen[low])
		}
	}
	return p.err("seed disc")
}

func checkLabel(p *problems, label string) {
	switch {
	case label == "":
		p.add("label", "is required (e.g. %q for cloud-init, %q for kickstart)", LabelCloudInit, LabelKickstart)
	case len(label) > maxLabelLen:
		p.add("label", "%q is %d characters; a volume label has at most %d", label, len(label), maxLabelLen)
	case !isNameChars(label):
		p.add("label", "%q may only contain letters, digits, '_' and '-'", label)
	}
}

// checkDiscPath reports the problems of one file path; false if there were any.
func checkDiscPath(p *problems, field, name string) bool {
	before := len(p.list)
	if name == "" {
		p.add(field, "the file name is empty")
		return false
	}
	if strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//") {
		p.add(field, "%q: use a relative path like \"dir/file.txt\" with no leading, trailing or doubled '/'", name)
		return false
	}
	parts := strings.Split(name, "/")
	if len(parts)-1 > maxDirDepth {
		p.add(field, "%q is nested %d directories deep; at most %d are allowed", name, len(parts)-1, maxDirDepth)
	}
	for _, dir := range parts[:len(parts)-1] {
		switch {
		case len(dir) > maxDirNameLen:
			p.add(field, "directory %q in %q is longer than %d characters", dir, name, maxDirNameLen)
		case !isNameChars(dir):
			p.add(field, "directory %q in %q may only contain letters, digits, '_' and '-'", dir, name)
		}
	}
	base := parts[len(parts)-1]
	stem, ext, hasExt := strings.Cut(base, ".")
	switch {
	case len(base) > maxFileNameLen:
		p.add(field, "%q is %d characters; a seed disc file name has at most %d (30 on the disc, less the \";1\" version)", base, len(base), maxFileNameLen)
	case stem == "" || (hasExt && ext == ""):
		p.add(field, "%q needs a name before the '.' and an extension after it", base)
	case strings.Contains(ext, "."):
		p.add(field, "%q has more than one '.'; ISO 9660 names have one", base)
	case !isNameChars(stem) || !isNameChars(ext):
		p.add(field, "%q may only contain letters, digits, '_', '-' and one '.'", base)
	case len(ext) > maxExtLen:
		p.add(field, "%q has an extension longer than %d characters", base, maxExtLen)
	}
	return len(p.list) == before
}

func isNameChars(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// WriteISO writes d as an ISO 9660 image to w. The image has primary names
// only (no Joliet, Rock Ridge or El Torito); see File for how names are stored.
func WriteISO(w io.Writer, d Disc) (err error) {
	if err := d.Validate(); err != nil {
		return err
	}
	iw, err := iso9660.NewWriter()
	if err != nil {
		return fmt.Errorf("seed disc: staging directory: %w", err)
	}
	defer func() {
		if cerr := iw.Cleanup(); cerr != nil && err == nil {
			err = fmt.Errorf("seed disc: removing staging directory: %w", cerr)
		}
	}()
	for _, f := range d.Files {
		if err := iw.AddFile(bytes.NewReader(f.Data), strings.ToLower(f.Name)); err != nil {
			return fmt.Errorf("seed disc: adding %q: %w", f.Name, err)
		}
	}
	pw := &pvdDates{w: w, dates: volumeDates(d.Time)}
	if err := iw.WriteTo(pw, d.Label); err != nil {
		return fmt.Errorf("seed disc: writing image: %w", err)
	}
	return nil
}

// WriteISOFile writes d to the file at dst. It writes to a temporary file in
// the same directory and renames it into place, so a failure leaves no
// partial disc and no temporary file.
func WriteISOFile(dst string, d Disc) (err error) {
	if err := d.Validate(); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return fmt.Errorf("seed disc: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = WriteISO(tmp, d); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("seed disc: %w", err)
	}
	if err = os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("seed disc: %w", err)
	}
	return nil
}

// ReadISO reads a disc written by WriteISO (or any ISO 9660 image with
// primary names) back: its label and files, names as the disc stores them
// without the ";1" version, sorted by name.
func ReadISO(r io.ReaderAt) (Disc, error) {
	img, err := iso9660.OpenImage(r)
	if err != nil {
		return Disc{}, fmt.Errorf("reading seed disc: %w", err)
	}
	label, err := img.Label()
	if err != nil {
		return Disc{}, fmt.Errorf("reading seed disc label: %w", err)
	}
	root, err := img.RootDir()
	if err != nil {
		return Disc{}, fmt.Errorf("reading seed disc root: %w", err)
	}
	d := Disc{Label: label}
	if err := readDir(root, "", &d.Files); err != nil {
		return Disc{}, err
	}
	sort.Slice(d.Files, func(i, j int) bool { return d.Files[i].Name < d.Files[j].Name })
	return d, nil
}

func readDir(dir *iso9660.File, prefix string, out *[]File) error {
	children, err := dir.GetChildren()
	if err != nil {
		return fmt.Errorf("reading seed disc directory %q: %w", prefix, err)
	}
	for _, c := range children {
		name := prefix + c.Name()
		if c.IsDir() {
			if err := readDir(c, name+"/", out); err != nil {
				return err
			}
			continue
		}
		data, err := io.ReadAll(c.Reader())
		if err != nil {
			return fmt.Errorf("reading %q from seed disc: %w", name, err)
		}
		*out = append(*out, File{Name: name, Data: data})
	}
	return nil
}

// ErrTooLarge is returned by ReadISOFile for a directory or file larger
// than its limit.
var ErrTooLarge = errors.New("larger than allowed")

// ReadISOFile reads one file of the root directory of an ISO 9660 image,
// its name compared case-insensitively and without its ";1" version, as
// Windows' CDFS compares them, reading at most max bytes of the root
// directory and of the file: unlike ReadISO it reads nothing else, so a
// disc from an untrusted source cannot make the reader hold more.
//
// It parses the primary volume descriptor and the root directory's
// records itself (ECMA-119 8.4 and 9.1) and ignores their System Use
// areas (SUSP, Rock Ridge): a general ISO 9660 reader follows continuation
// areas and trusts record counts, which lets a crafted disc crash, hang or
// exhaust the memory of the process reading it.
func ReadISOFile(r io.ReaderAt, name string, max int64) ([]byte, error) {
	blockSize, root, err := readPrimaryVolume(r)
	if err != nil {
		return nil, fmt.Errorf("reading seed disc: %w", err)
	}
	if !root.isDir() {
		return nil, errors.New("reading seed disc root: the root directory record is not a directory")
	}
	if root.size > max {
		return nil, fmt.Errorf("seed disc root directory: %d bytes, %w (%d)", root.size, ErrTooLarge, max)
	}
	dir, err := readExtent(r, root, blockSize)
	if err != nil {
		return nil, fmt.Errorf("reading seed disc root: %w", err)
	}
	// 6.8.1.1: records do not cross a logical block; a zero length byte
	// pads the rest of a block.
	for blk := 0; blk < len(dir); blk += blockSize {
		b := dir[blk:min(blk+blockSize, len(dir))]
		for i := 0; i < len(b) && b[i] != 0; {
			rec, err := parseDirRecord(b[i:])
			if err != nil {
				return nil, fmt.Errorf("reading seed disc root: %w", err)
			}
			i += rec.length
			if rec.isDir() || !strings.EqualFold(rec.name, name) {
				continue
			}
			if rec.multiExtent || rec.interleaved {
				return nil, fmt.Errorf("%q on the seed disc is recorded in several extents or interleaved, which seed discs never are", name)
			}
			if rec.size > max {
				return nil, fmt.Errorf("%q on the seed disc: %d bytes, %w (%d)", name, rec.size, ErrTooLarge, max)
			}
			data, err := readExtent(r, rec, blockSize)
			if err != nil {
				return nil, fmt.Errorf("reading %q from seed disc: %w", name, err)
			}
			return data, nil
		}
	}
	return nil, fmt.Errorf("%q: %w", name, ErrNotFound)
}

// Where ISO 9660 keeps its volume descriptors (ECMA-119 6.2.1, 8.1): from
// sector 16, 2048 bytes each, until a terminator. maxVolumeDescriptors
// bounds the walk on a disc without one.
const (
	isoSectorSize        = 2048
	firstVolumeSector    = 16
	maxVolumeDescriptors = 32
)

// readPrimaryVolume finds the primary volume descriptor (8.4) and returns
// its logical block size and root directory record.
func readPrimaryVolume(r io.ReaderAt) (int, dirRecord, error) {
	vd := make([]byte, isoSectorSize)
	for i := int64(0); i < maxVolumeDescriptors; i++ {
		if n, err := r.ReadAt(vd, (firstVolumeSector+i)*isoSectorSize); n < len(vd) {
			return 0, dirRecord{}, fmt.Errorf("volume descriptor %d: %w", i, orUnexpectedEOF(err))
		}
		if string(vd[1:6]) != "CD001" {
			return 0, dirRecord{}, errors.New("not an ISO 9660 image (no CD001 volume descriptor at sector 16)")
		}
		switch vd[0] {
		case 255: // 8.3: the set terminator
			return 0, dirRecord{}, errors.New("no primary volume descriptor")
		case 1:
			// 8.4.12: a power of two from 512 (6.1.2); 2048 on every
			// CD-ROM, and the most a sector holds.
			bs := int(binary.LittleEndian.Uint16(vd[128:]))
			if bs != 512 && bs != 1024 && bs != 2048 {
				return 0, dirRecord{}, fmt.Errorf("logical block size %d is not 512, 1024 or 2048", bs)
			}
			root, err := parseDirRecord(vd[156 : 156+34]) // 8.4.18
			if err != nil {
				return 0, dirRecord{}, fmt.Errorf("root directory record: %w", err)
			}
			return bs, root, nil
		}
	}
	return 0, dirRecord{}, fmt.Errorf("no primary volume descriptor in the first %d", maxVolumeDescriptors)
}

// dirRecord is the part of a directory record (ECMA-119 9.1) a lookup
// needs. The System Use area after the identifier is not read.
type dirRecord struct {
	length      int   // of the record, in bytes
	block       int64 // first logical block of the extent, past any extended attribute record
	size        int64 // of the file or directory, in bytes
	flags       byte
	multiExtent bool // 9.1.6 bit 7: the file continues in the next record
	interleaved bool // 9.1.7, 9.1.8: file unit size or interleave gap set
	name        string
}

func (d dirRecord) isDir() bool { return d.flags&2 != 0 }

func parseDirRecord(b []byte) (dirRecord, error) {
	const fixed = 33 // 9.1: the record up to its identifier
	if len(b) < fixed+1 || int(b[0]) < fixed+1 || int(b[0]) > len(b) {
		return dirRecord{}, errors.New("damaged directory record")
	}
	rec := dirRecord{
		length:      int(b[0]),
		block:       int64(binary.LittleEndian.Uint32(b[2:])) + int64(b[1]),
		size:        int64(binary.LittleEndian.Uint32(b[10:])),
		flags:       b[25],
		multiExtent: b[25]&0x80 != 0,
		interleaved: b[26] != 0 || b[27] != 0,
	}
	idLen := int(b[32])
	if fixed+idLen > rec.length {
		return dirRecord{}, errors.New("damaged directory record: its identifier overruns it")
	}
	rec.name = isoName(b[fixed : fixed+idLen])
	return rec, nil
}

// isoName is a file identifier without its version (";1") and without
// the '.' that separates an empty extension (7.5.1), as Windows shows it.
// The "." and ".." records (identifiers 0 and 1) have no name.
func isoName(id []byte) string {
	if len(id) == 1 && id[0] <= 1 {
		return ""
	}
	name, _, _ := strings.Cut(string(id), ";")
	return strings.TrimSuffix(name, ".")
}

// readExtent reads the whole extent of a record whose size was checked.
func readExtent(r io.ReaderAt, rec dirRecord, blockSize int) ([]byte, error) {
	data := make([]byte, rec.size)
	if n, err := r.ReadAt(data, rec.block*int64(blockSize)); n < len(data) {
		return nil, orUnexpectedEOF(err)
	}
	return data, nil
}

// orUnexpectedEOF: a short read of a disc image ends it too early.
func orUnexpectedEOF(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ErrNotFound is returned by Disc.File for a name the disc does not hold.
var ErrNotFound = errors.New("not on the seed disc")

// File returns the data of the named file, compared case-insensitively as
// the guest's CD driver does.
func (d Disc) File(name string) ([]byte, error) {
	for _, f := range d.Files {
		if strings.EqualFold(f.Name, name) {
			return f.Data, nil
		}
	}
	return nil, fmt.Errorf("%q: %w", name, ErrNotFound)
}

// The primary volume descriptor is sector 16; its four dates (creation,
// modification, expiration, effective; ECMA-119 8.4.26-29) are 17 bytes each
// from offset 813. The writer stamps the time of the call there; pvdDates
// replaces those bytes as they stream past so the image is reproducible.
const (
	pvdDatesStart = 16*2048 + 813
	pvdDatesEnd   = pvdDatesStart + 4*17
)

// volumeDates returns the 68 date bytes: t for creation, modification and
// effective (or "not specified" for the zero time), and never expiring.
func volumeDates(t time.Time) []byte {
	unspecified := append(bytes.Repeat([]byte{'0'}, 16), 0)
	stamp := unspecified
	if !t.IsZero() {
		u := t.UTC()
		stamp = append([]byte(fmt.Sprintf("%04d%02d%02d%02d%02d%02d%02d",
			u.Year(), u.Month(), u.Day(), u.Hour(), u.Minute(), u.Second(), u.Nanosecond()/1e7)), 0)
	}
	out := make([]byte, 0, 4*17)
	out = append(out, stamp...)
	out = append(out, stamp...)
	out = append(out, unspecified...)
	return append(out, stamp...)
}

type pvdDates struct {
	w     io.Writer
	off   int64
	dates []byte
}

func (p *pvdDates) Write(b []byte) (int, error) {
	start, end := p.off, p.off+int64(len(b))
	if start < pvdDatesEnd && end > pvdDatesStart {
		b = bytes.Clone(b)
		for i := max(start, pvdDatesStart); i < min(end, pvdDatesEnd); i++ {
			b[i-start] = p.dates[i-pvdDatesStart]
		}
	}
	n, err := p.w.Write(b)
	p.off += int64(n)
	return n, err
}
