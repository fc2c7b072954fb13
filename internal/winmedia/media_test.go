// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package winmedia_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/winmedia"
	"github.com/kubenode/packer-plugin-kubenode/internal/winmedia/mediatest"
)

func want(images []mediatest.Image) []winmedia.Image {
	out := make([]winmedia.Image, len(images))
	for i, im := range images {
		out[i] = winmedia.Image{Index: i + 1, Name: im.Name, DisplayName: im.DisplayName, EditionID: im.EditionID, InstallationType: im.InstallationType}
	}
	return out
}

func TestReadListsTheImagesOfAMicrosoftLikeDisc(t *testing.T) {
	images := mediatest.EvaluationImages("Windows Server 2022")
	for _, esd := range []bool{false, true} {
		name := map[bool]string{false: "install.wim", true: "install.esd"}[esd]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			iso := mediatest.WindowsISO(t, dir, mediatest.WIM(t, dir, images, esd))

			// As on Microsoft's discs, the ISO 9660 tree does not show the
			// install image: only the UDF tree has it.
			out, err := exec.Command("isoinfo", "-f", "-i", iso).CombinedOutput()
			require.NoError(t, err, string(out))
			assert.Contains(t, string(out), "SETUP.EXE")
			assert.NotContains(t, strings.ToUpper(string(out)), "INSTALL")

			start := time.Now()
			m, err := winmedia.Read(context.Background(), iso)
			t.Logf("read the image list of %s in %s", name, time.Since(start))
			require.NoError(t, err)
			assert.Equal(t, "sources/"+name, m.Path)
			assert.Equal(t, want(images), m.Images)
		})
	}
}

func TestReadImagesOfASolidESDWithoutDecompressing(t *testing.T) {
	images := mediatest.EvaluationImages("Windows Server 2025")[2:]
	esd := mediatest.WIM(t, t.TempDir(), images, true)
	out, err := exec.Command("wiminfo", "--header", esd).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "WIM_HDR_FLAG_COMPRESS_LZMS", "the fixture must be a solid LZMS ESD")
	f, err := os.Open(esd)
	require.NoError(t, err)
	defer f.Close()
	got, err := winmedia.ReadImages(f)
	require.NoError(t, err)
	assert.Equal(t, []winmedia.Image{
		{Index: 1, Name: images[0].Name, DisplayName: images[0].DisplayName, EditionID: "ServerDatacenterEval", InstallationType: "Server Core"},
		{Index: 2, Name: images[1].Name, DisplayName: images[1].DisplayName, EditionID: "ServerDatacenterEval", InstallationType: "Server"},
	}, got)
}

func TestReadRefusesDiscsThatAreNotWindowsMedia(t *testing.T) {
	dir := t.TempDir()
	for name, udf := range map[string]bool{"debian.iso": false, "udf-no-sources.iso": true} {
		iso := mediatest.PlainISO(t, dir, name, udf, map[string]string{"install.amd/vmlinuz": "k", "sources/readme.txt": "x"})
		_, err := winmedia.Read(context.Background(), iso)
		assert.ErrorIs(t, err, winmedia.ErrNoInstallImage, name)
		assert.ErrorContains(t, err, "no sources/install.wim or sources/install.esd", name)
	}
	// A file called install.wim that is not one.
	iso := mediatest.PlainISO(t, dir, "fake.iso", true, map[string]string{"sources/install.wim": "not a wim"})
	_, err := winmedia.Read(context.Background(), iso)
	assert.ErrorIs(t, err, winmedia.ErrNotWIM)
	assert.ErrorContains(t, err, "sources/install.wim")
}

// Ctrl-C during the edition check stops the reads of the disc.
func TestReadStopsWhenTheContextIsDone(t *testing.T) {
	dir := t.TempDir()
	iso := mediatest.WindowsISO(t, dir, mediatest.WIM(t, dir, mediatest.EvaluationImages("Windows Server 2022")[:1], false))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := winmedia.Read(ctx, iso)
	assert.ErrorIs(t, err, context.Canceled)
}

// An evaluation disc's images are told from licensed media's by what the
// WIM says of them, read from real WIMs written by wimtools.
func TestEvaluationImagesAreToldFromLicensedOnes(t *testing.T) {
	for _, tc := range []struct {
		images []mediatest.Image
		eval   bool
	}{
		{mediatest.EvaluationImages("Windows Server 2025"), true},
		{mediatest.VolumeImages("Windows Server 2025"), false},
	} {
		f, err := os.Open(mediatest.WIM(t, t.TempDir(), tc.images, false))
		require.NoError(t, err)
		got, err := winmedia.ReadImages(f)
		f.Close()
		require.NoError(t, err)
		require.Len(t, got, len(tc.images))
		for _, im := range got {
			assert.Equal(t, tc.eval, im.Evaluation(), "%+v", im)
		}
	}
	// Without an EditionID the display name tells.
	assert.True(t, winmedia.Image{DisplayName: "Windows Server 2019 Datacenter Evaluation"}.Evaluation())
	assert.False(t, winmedia.Image{DisplayName: "Windows Server 2019 Datacenter"}.Evaluation())
	// The EditionID wins over the display name.
	assert.False(t, winmedia.Image{EditionID: "ServerDatacenter", DisplayName: "Evaluation copy"}.Evaluation())
}
