// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/winmedia"
	"github.com/kubenode/packer-plugin-kubenode/internal/winmedia/mediatest"
)

// windowsRaw is a Windows build from iso on a Windows-ready VM.
func windowsRaw(t *testing.T, iso string, windows map[string]interface{}) map[string]interface{} {
	dir := t.TempDir()
	virtio := filepath.Join(dir, "virtio-win.iso")
	require.NoError(t, os.WriteFile(virtio, []byte("drivers"), 0o644))
	windows["version"] = "2022"
	return map[string]interface{}{
		"iso_url": iso, "iso_checksum": "none", "winrm_password": "Passw0rd!", "accelerator": "tcg",
		"virtio_win_iso": virtio, "output_directory": filepath.Join(dir, "out"),
		"seed_directory": filepath.Join(dir, "seed"), "windows": windows,
	}
}

// standardOnlyISO is a disc with Standard Core and Standard Desktop only,
// as volume media of one edition are.
func standardOnlyISO(t *testing.T, esd bool) string {
	dir := t.TempDir()
	images := mediatest.VolumeImages("Windows Server 2022")[:2]
	return mediatest.WindowsISO(t, dir, mediatest.WIM(t, dir, images, esd))
}

func TestBuildRefusesAnEditionTheDiscLacksBeforeCreatingAnything(t *testing.T) {
	iso := standardOnlyISO(t, false)
	b := &Builder{}
	m := NewMockDriver()
	b.newDriver = func(string) (Driver, error) { return m, nil }
	// The UEFI build's firmware state check passes on a temporary tree
	// whoever runs the test.
	libvirtTree(t, 0o751, 0o755, 0)
	_, _, err := b.Prepare(windowsRaw(t, iso, map[string]interface{}{})) // datacenter core by default
	require.NoError(t, err)

	var out, errOut bytes.Buffer
	ui := &packersdk.BasicUi{Reader: new(bytes.Buffer), Writer: &out, ErrorWriter: &errOut, PB: &packersdk.NoopProgressTracker{}}
	start := time.Now()
	// Without the check the build would go on to wait for WinRM: bound it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = b.Run(ctx, ui, &packersdk.MockHook{})
	t.Logf("the build stopped %s after it started", time.Since(start))
	require.Error(t, err)
	assert.Equal(t, `windows.edition: the install disc's sources/install.wim has no image named "Windows Server 2022 SERVERDATACENTERCORE" `+
		`(version "2022", edition "datacenter", experience "core"); it has: `+
		`1 "Windows Server 2022 SERVERSTANDARDCORE" (Windows Server 2022 Standard), `+
		`2 "Windows Server 2022 SERVERSTANDARD" (Windows Server 2022 Standard (Desktop Experience)). `+
		`Set windows.edition and windows.experience to one of these, or windows.image_index to its number`, err.Error())
	assert.Equal(t, []string{"Close"}, m.Calls, "nothing was created on the hypervisor")
	assert.Empty(t, m.Pools)
}

func TestStepCheckInstallImagePinsTheCheckedImage(t *testing.T) {
	for _, esd := range []bool{false, true} {
		iso := standardOnlyISO(t, esd)
		var c Config
		_, err := c.Prepare(windowsRaw(t, iso, map[string]interface{}{"edition": "standard", "experience": "desktop"}))
		require.NoError(t, err)
		state := testState(t, &c, NewMockDriver())
		state.Put(stateISOPath, iso)

		start := time.Now()
		require.Equal(t, multistep.ActionContinue, (&stepCheckInstallImage{}).Run(context.Background(), state))
		t.Logf("preflight of the %s disc: %s", map[bool]string{false: "install.wim", true: "install.esd"}[esd], time.Since(start))
		assert.Equal(t, 2, state.Get(stateImageIndex))

		// The answer file selects exactly the image that was checked.
		seed := &stepCreateSeed{}
		require.Equal(t, multistep.ActionContinue, seed.Run(context.Background(), state))
		defer seed.Cleanup(state)
		xml, err := os.ReadFile(filepath.Join(c.SeedDirectory, autounattend.WindowsAnswerFile))
		require.NoError(t, err)
		assert.Regexp(t, `<Key>/IMAGE/INDEX</Key>\s*<Value>2</Value>`, string(xml))
		assert.NotContains(t, string(xml), "/IMAGE/NAME")
	}
}

func TestStepCheckInstallImageRefusesDiscsThatAreNotWindows(t *testing.T) {
	iso := mediatest.PlainISO(t, t.TempDir(), "debian.iso", false, map[string]string{"install.amd/vmlinuz": "k"})
	var c Config
	_, err := c.Prepare(windowsRaw(t, iso, map[string]interface{}{}))
	require.NoError(t, err)
	state := testState(t, &c, NewMockDriver())
	state.Put(stateISOPath, iso)
	require.Equal(t, multistep.ActionHalt, (&stepCheckInstallImage{}).Run(context.Background(), state))
	err = state.Get("error").(error)
	assert.ErrorIs(t, err, winmedia.ErrNoInstallImage)
	assert.True(t, strings.HasPrefix(err.Error(), "iso_url: "+iso+": no sources/install.wim or sources/install.esd"), err.Error())
}

func TestChooseInstallImageNamesTheKeyToChange(t *testing.T) {
	media := &winmedia.Media{Path: "sources/install.wim"}
	for i, im := range mediatest.EvaluationImages("Windows Server 2022") {
		media.Images = append(media.Images, winmedia.Image{Index: i + 1, Name: im.Name})
	}
	standardDesktop := &winmedia.Media{Path: "sources/install.esd", Images: []winmedia.Image{media.Images[1]}}
	for _, tc := range []struct {
		w     autounattend.Windows
		media *winmedia.Media
		index int
		key   string
	}{
		{autounattend.Windows{Version: "2022"}, media, 3, ""},
		{autounattend.Windows{Version: "2022", Edition: "standard", Experience: "desktop"}, media, 2, ""},
		{autounattend.Windows{Version: "2022", ImageIndex: 4}, media, 4, ""},
		{autounattend.Windows{Version: "2022", ImageName: "Windows Server 2022 SERVERSTANDARDCORE"}, media, 1, ""},
		{autounattend.Windows{Version: "2022", ImageIndex: 5}, media, 0, "windows.image_index: the install disc's sources/install.wim has no image 5;"},
		{autounattend.Windows{Version: "2022", ImageName: "Windows Server 2022 SERVERWEB"}, media, 0, "windows.image_name:"},
		{autounattend.Windows{Version: "2022", Edition: "standard"}, standardDesktop, 0, "windows.experience:"},
		{autounattend.Windows{Version: "2022", Experience: "desktop"}, standardDesktop, 0, "windows.edition:"},
		{autounattend.Windows{Version: "2022"}, standardDesktop, 0, "windows.edition:"},
		{autounattend.Windows{Version: "2019"}, media, 0, "windows.version:"},
	} {
		im, err := chooseInstallImage(tc.w, tc.media)
		if tc.key == "" {
			require.NoError(t, err, "%+v", tc.w)
			assert.Equal(t, tc.index, im.Index, "%+v", tc.w)
			continue
		}
		require.Error(t, err, "%+v", tc.w)
		assert.True(t, strings.HasPrefix(err.Error(), tc.key), "%+v: %v", tc.w, err)
		for _, listed := range tc.media.Images {
			assert.Contains(t, err.Error(), listed.Name)
		}
	}
}

func TestStepCheckInstallImageStopsOnCtrlC(t *testing.T) {
	iso := standardOnlyISO(t, false)
	var c Config
	_, err := c.Prepare(windowsRaw(t, iso, map[string]interface{}{"edition": "standard"}))
	require.NoError(t, err)
	state := testState(t, &c, NewMockDriver())
	state.Put(stateISOPath, iso)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Equal(t, multistep.ActionHalt, (&stepCheckInstallImage{}).Run(ctx, state))
	_, failed := state.GetOk("error")
	assert.False(t, failed, "a cancelled build reports no error of its own")
	_, pinned := state.GetOk(stateImageIndex)
	assert.False(t, pinned)
}

// An evaluation disc builds, with a warning that its clones shut down
// every hour once the evaluation period is over; licensed media build
// without one.
func TestStepCheckInstallImageWarnsAboutEvaluationMedia(t *testing.T) {
	for _, tc := range []struct {
		images []mediatest.Image
		warn   string
	}{
		{mediatest.EvaluationImages("Windows Server 2022"), `Warning: iso_url: image 3 "Windows Server 2022 SERVERDATACENTERCORE" of the install disc is an evaluation edition (ServerDatacenterEval): ` +
			"once its evaluation period is over, Windows shuts down every hour, and so does every VM made from this image."},
		{mediatest.VolumeImages("Windows Server 2022"), ""},
	} {
		dir := t.TempDir()
		iso := mediatest.WindowsISO(t, dir, mediatest.WIM(t, dir, tc.images, false))
		var c Config
		_, err := c.Prepare(windowsRaw(t, iso, map[string]interface{}{}))
		require.NoError(t, err)
		state := testState(t, &c, NewMockDriver())
		state.Put(stateISOPath, iso)
		require.Equal(t, multistep.ActionContinue, (&stepCheckInstallImage{}).Run(context.Background(), state))
		assert.Equal(t, 3, state.Get(stateImageIndex))
		errOut := state.Get(stateUI).(*packersdk.BasicUi).ErrorWriter.(*bytes.Buffer).String()
		if tc.warn == "" {
			assert.Empty(t, errOut)
			continue
		}
		assert.Contains(t, errOut, tc.warn)
		assert.Contains(t, errOut, `windows.product_key = "kms"`)
	}
}
