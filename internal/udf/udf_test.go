// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package udf_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/udf"
	"github.com/kubenode/packer-plugin-kubenode/internal/winmedia/mediatest"
)

func TestOpenFindsFilesOnAGenisoimageUDFDisc(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 3000) // spans several sectors
	files := map[string]string{
		"README.TXT":                 "top",
		"sources/install.wim":        big,
		"sources/lang.ini":           "[x]",
		"efi/microsoft/boot/bcd.bin": "deep",
	}
	dir := t.TempDir()
	iso := mediatest.PlainISO(t, dir, "udf.iso", true, files)
	f, err := os.Open(iso)
	require.NoError(t, err)
	defer f.Close()
	fs, err := udf.Open(context.Background(), f)
	require.NoError(t, err)

	for name, want := range files {
		file, err := fs.Open(name)
		require.NoError(t, err, name)
		assert.Equal(t, int64(len(want)), file.Size(), name)
		got, err := io.ReadAll(io.NewSectionReader(file, 0, file.Size()))
		require.NoError(t, err, name)
		assert.Equal(t, want, string(got), name)
	}

	// Names compare as Windows compares them.
	file, err := fs.Open("/SOURCES/Install.WIM")
	require.NoError(t, err)
	part := make([]byte, 16)
	n, err := file.ReadAt(part, 2048*2-8) // across a sector boundary
	require.NoError(t, err)
	assert.Equal(t, big[2048*2-8:2048*2+8], string(part[:n]))
	n, err = file.ReadAt(part, file.Size()-4)
	assert.Equal(t, 4, n)
	assert.ErrorIs(t, err, io.EOF)

	_, err = fs.Open("sources/install.esd")
	assert.ErrorIs(t, err, udf.ErrNotExist)
	_, err = fs.Open("nothere/install.wim")
	assert.ErrorIs(t, err, udf.ErrNotExist)
	_, err = fs.Open("sources")
	assert.ErrorContains(t, err, "is a directory")
	_, err = fs.Open("README.TXT/x")
	assert.ErrorContains(t, err, "not a directory")
}

func TestOpenRefusesDiscsWithoutUDF(t *testing.T) {
	iso := mediatest.PlainISO(t, t.TempDir(), "plain.iso", false, map[string]string{"casper/vmlinuz": "k"})
	f, err := os.Open(iso)
	require.NoError(t, err)
	defer f.Close()
	_, err = udf.Open(context.Background(), f)
	assert.ErrorIs(t, err, udf.ErrNotUDF)

	_, err = udf.Open(context.Background(), bytes.NewReader(make([]byte, 100)))
	assert.True(t, errors.Is(err, udf.ErrNotUDF), "%v", err)
}

func TestOpenReadsADiscWrittenBlockByBlock(t *testing.T) {
	files := map[string]string{"sources/install.wim": wim(), "setup.exe": "MZ", "boot/efi/bcd": "bcd"}
	fs, err := udf.Open(context.Background(), bytes.NewReader(newDisc(files).image()))
	require.NoError(t, err)
	for name, want := range files {
		f, err := fs.Open(name)
		require.NoError(t, err, name)
		got, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
		require.NoError(t, err, name)
		assert.Equal(t, want, string(got), name)
	}
}

// A crafted install disc must not keep the edition check (or the fuzzer)
// busy: every allocation extent chain ends, and a continuation must point
// at an allocation extent descriptor.
func TestOpenRefusesCraftedAllocationExtents(t *testing.T) {
	for _, tc := range []struct {
		name  string
		craft func(d *disc, entry uint32)
		err   string
	}{
		{"continuation pointing at itself", func(d *disc, entry uint32) {
			aed := d.alloc(1)
			d.setAllocationExtent(aed, 258, shortAD(3, sector, aed))
			d.setEntry(entry, 5, 4096, shortAD(3, sector, aed))
		}, "allocation descriptors continue in a loop"},
		{"two continuations pointing at each other", func(d *disc, entry uint32) {
			a := d.alloc(2)
			d.setAllocationExtent(a, 258, append(shortAD(0, sector, 0), shortAD(3, sector, a+1)...))
			d.setAllocationExtent(a+1, 258, shortAD(3, sector, a))
			d.setEntry(entry, 5, 4096, shortAD(3, sector, a))
		}, "allocation descriptors continue in a loop"},
		{"continuation to a block that is not an allocation extent descriptor", func(d *disc, entry uint32) {
			a := d.alloc(1)
			d.setAllocationExtent(a, 261, shortAD(0, sector, 0)) // a file entry's tag
			d.setEntry(entry, 5, sector, shortAD(3, sector, a))
		}, "no allocation extent descriptor where a continuation points"},
		{"continuation to an empty block", func(d *disc, entry uint32) {
			d.setEntry(entry, 5, sector, shortAD(3, sector, d.alloc(1)))
		}, "no allocation extent descriptor where a continuation points"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDisc(map[string]string{"sources/install.wim": wim()})
			tc.craft(d, d.entries["sources/install.wim"])
			done := make(chan error, 1)
			go func() {
				fs, err := udf.Open(context.Background(), bytes.NewReader(d.image()))
				if err == nil {
					_, err = fs.Open("sources/install.wim")
				}
				done <- err
			}()
			select {
			case err := <-done:
				assert.ErrorContains(t, err, tc.err)
			case <-time.After(10 * time.Second):
				t.Fatal("udf: still reading the allocation extents after 10s")
			}
		})
	}
}

func TestOpenStopsWhenTheContextIsDone(t *testing.T) {
	img := bytes.NewReader(newDisc(map[string]string{"sources/install.wim": wim()}).image())
	ctx, cancel := context.WithCancel(context.Background())
	fs, err := udf.Open(ctx, img)
	require.NoError(t, err)
	f, err := fs.Open("sources/install.wim")
	require.NoError(t, err)
	cancel()
	_, err = f.ReadAt(make([]byte, 8), 0)
	assert.ErrorIs(t, err, context.Canceled, "reads of an opened file stop too")
	_, err = fs.Open("sources/install.wim")
	assert.ErrorIs(t, err, context.Canceled)
	_, err = udf.Open(ctx, img)
	assert.ErrorIs(t, err, context.Canceled)
}
