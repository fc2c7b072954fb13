// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package winmedia reads which images a Windows install disc offers: it
// finds sources/install.wim or sources/install.esd on the disc (in its UDF
// file system, see internal/udf) and reads the image list from the WIM's
// XML data. Nothing is decompressed and nothing is mounted, so it takes
// a few small reads whatever the size of the disc.
//
// The WIM layout is Microsoft's "Windows Imaging File Format (WIM)"
// specification (the WIM header, the resource header RESHDR_DISK_SHORT and
// the XML data resource); wimlib's include/wimlib/header.h and
// include/wimlib/resource.h describe the same layout. ESD files are WIMs
// whose file resources are solid LZMS; their XML data is stored as in any
// WIM, uncompressed.
package winmedia

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf16"
)

// wimMagic starts every WIM header (ImageTag).
var wimMagic = []byte("MSWIM\x00\x00\x00")

const (
	wimHeaderSize = 208
	// Offset of rhXmlData, the XML data's resource header, in the WIM header.
	xmlResourceOffset = 72
	// resourceCompressed is RESHDR_FLAG_COMPRESSED in a resource header's flags.
	resourceCompressed = 0x04
	// maxXMLSize bounds the XML read; Microsoft's media have a few KiB per image.
	maxXMLSize = 16 << 20
)

// Image is one entry of a WIM's image list.
type Image struct {
	// Index is the image's number (/IMAGE/INDEX), from 1.
	Index int
	// Name is what an answer file's /IMAGE/NAME matches, e.g.
	// "Windows Server 2022 SERVERDATACENTERCORE".
	Name string
	// DisplayName is what Setup shows, e.g. "Windows Server 2022
	// Datacenter (Desktop Experience)".
	DisplayName string
	// EditionID is WINDOWS/EDITIONID, e.g. "ServerDatacenter".
	EditionID string
	// InstallationType is WINDOWS/INSTALLATIONTYPE: "Server Core" or "Server".
	InstallationType string
}

// Evaluation reports whether the image is an evaluation edition, which
// Microsoft gives an EditionID ending in "Eval" (ServerStandardEval,
// ServerDatacenterEval; "DISM /online /Get-CurrentEdition" shows the same
// name on an installed system): once its evaluation period is over,
// Windows shuts itself down every hour. Media whose image list names no
// EditionID are taken by their display name ("... Evaluation").
func (im Image) Evaluation() bool {
	if im.EditionID != "" {
		return strings.HasSuffix(strings.ToLower(im.EditionID), "eval")
	}
	return strings.Contains(strings.ToLower(im.DisplayName), "evaluation")
}

// ErrNotWIM is returned when the data does not start with a WIM header.
var ErrNotWIM = errors.New("not a WIM or ESD file (no MSWIM header)")

// ReadImages reads the image list of the WIM or ESD file r.
func ReadImages(r io.ReaderAt) ([]Image, error) {
	h := make([]byte, wimHeaderSize)
	if _, err := r.ReadAt(h, 0); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrNotWIM
		}
		return nil, err
	}
	if !bytes.Equal(h[:8], wimMagic) {
		return nil, ErrNotWIM
	}
	// RESHDR_DISK_SHORT: a 7-byte size, a flags byte, the offset and the
	// original size, 64 bits each.
	res := h[xmlResourceOffset:]
	size := binary.LittleEndian.Uint64(res) & (1<<56 - 1)
	flags := res[7]
	offset := binary.LittleEndian.Uint64(res[8:])
	if flags&resourceCompressed != 0 {
		return nil, errors.New("the WIM's XML data is compressed, which the WIM format does not do")
	}
	if size == 0 {
		return nil, errors.New("the WIM has no XML data")
	}
	if size > maxXMLSize || offset > 1<<62 {
		return nil, fmt.Errorf("the WIM's XML data (%d bytes at %d) is implausible", size, offset)
	}
	raw := make([]byte, size)
	if _, err := r.ReadAt(raw, int64(offset)); err != nil {
		return nil, fmt.Errorf("reading the WIM's XML data: %w", err)
	}
	return parseXML(raw)
}

// wimXML is the part of the XML data the image list needs.
type wimXML struct {
	Images []struct {
		Index       int    `xml:"INDEX,attr"`
		Name        string `xml:"NAME"`
		DisplayName string `xml:"DISPLAYNAME"`
		Windows     struct {
			EditionID        string `xml:"EDITIONID"`
			InstallationType string `xml:"INSTALLATIONTYPE"`
		} `xml:"WINDOWS"`
	} `xml:"IMAGE"`
}

// parseXML reads the XML data, a UTF-16LE document with a byte order mark.
func parseXML(raw []byte) ([]Image, error) {
	if len(raw) < 2 || len(raw)%2 != 0 || raw[0] != 0xFF || raw[1] != 0xFE {
		return nil, errors.New("the WIM's XML data is not UTF-16LE text")
	}
	u := make([]uint16, len(raw)/2-1)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(raw[2+2*i:])
	}
	text := []byte(string(utf16.Decode(u)))
	var doc wimXML
	dec := xml.NewDecoder(bytes.NewReader(text))
	// The text is already decoded; a declaration naming UTF-16 is true of
	// the bytes on disk, not of these.
	dec.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("the WIM's XML data: %w", err)
	}
	out := make([]Image, 0, len(doc.Images))
	for _, im := range doc.Images {
		out = append(out, Image{
			Index: im.Index, Name: im.Name, DisplayName: im.DisplayName,
			EditionID: im.Windows.EditionID, InstallationType: im.Windows.InstallationType,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}
