// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package winmedia_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"testing"
	"unicode/utf16"

	"github.com/kubenode/packer-plugin-kubenode/internal/fuzzkit"
	"github.com/kubenode/packer-plugin-kubenode/internal/winmedia"
	"github.com/kubenode/packer-plugin-kubenode/internal/winmedia/mediatest"
)

// wimWithXML is a WIM header whose XML data resource is doc, in UTF-16LE
// with a byte order mark, right after the header.
func wimWithXML(doc string) []byte {
	h := make([]byte, 208)
	copy(h, "MSWIM\x00\x00\x00")
	x := []byte{0xFF, 0xFE}
	for _, u := range utf16.Encode([]rune(doc)) {
		x = binary.LittleEndian.AppendUint16(x, u)
	}
	binary.LittleEndian.PutUint64(h[72:], uint64(len(x))) // size; flags 0
	binary.LittleEndian.PutUint64(h[80:], 208)            // offset
	return append(h, x...)
}

// FuzzReadImages: whatever install image a disc holds, reading its image
// list returns, in bounded time, without a panic.
func FuzzReadImages(f *testing.F) {
	f.Add(wimWithXML(`<WIM><IMAGE INDEX="1"><NAME>Windows Server 2022 SERVERDATACENTERCORE</NAME>` +
		`<WINDOWS><EDITIONID>ServerDatacenter</EDITIONID><INSTALLATIONTYPE>Server Core</INSTALLATIONTYPE></WINDOWS></IMAGE></WIM>`))
	f.Add(wimWithXML(`<?xml version="1.0" encoding="UTF-16"?><WIM><IMAGE INDEX="2"></IMAGE><IMAGE INDEX="-1"><NAME>&amp;</NAME></IMAGE></WIM>`))
	sample, err := os.ReadFile(mediatest.WIM(f, f.TempDir(), mediatest.EvaluationImages("Windows Server 2025")[:1], false))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample)

	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzkit.Within(t, fuzzkit.PerInput, func() error {
			images, err := winmedia.ReadImages(bytes.NewReader(data))
			if err == nil && len(images)*16 > len(data) {
				return fmt.Errorf("%d images from %d bytes", len(images), len(data))
			}
			return nil
		})
	})
}
