package udf_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

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
	fs, err := udf.Open(f)
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
	_, err = udf.Open(f)
	assert.ErrorIs(t, err, udf.ErrNotUDF)

	_, err = udf.Open(bytes.NewReader(make([]byte, 100)))
	assert.True(t, errors.Is(err, udf.ErrNotUDF), "%v", err)
}
