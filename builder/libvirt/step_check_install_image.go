// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/winmedia"
)

// stepCheckInstallImage reads the image list of the downloaded Windows
// install disc (sources/install.wim or install.esd) and stops the build
// when the image the answer file would select is not there, before any
// volume or domain exists: Setup would otherwise stop at its image
// selection with nobody to see it, and the build would wait for WinRM
// until winrm_timeout. It takes a few small reads of the disc.
//
// Uses: config, ui, iso_path. Produces: image_index.
type stepCheckInstallImage struct{}

func (s *stepCheckInstallImage) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	iso, _ := state.Get(stateISOPath).(string)
	if c.Windows == nil || iso == "" {
		return multistep.ActionContinue
	}
	start := time.Now()
	media, err := winmedia.Read(ctx, iso)
	if ctx.Err() != nil {
		return multistep.ActionHalt // Ctrl-C: nothing to report
	}
	if err != nil {
		return halt(state, ui, fmt.Errorf("iso_url: %w; the windows block needs a Windows Server install disc", err))
	}
	im, err := chooseInstallImage(c.windowsSeed(), media)
	if err != nil {
		return halt(state, ui, err)
	}
	ui.Say(fmt.Sprintf("Install image: %s image %d %q (%s), checked in %s",
		media.Path, im.Index, im.Name, im.DisplayName, time.Since(start).Round(time.Microsecond)))
	if w := evaluationWarning(im); w != "" {
		ui.Error(w)
	}
	state.Put(stateImageIndex, im.Index)
	return multistep.ActionContinue
}

func (s *stepCheckInstallImage) Cleanup(multistep.StateBag) {}

// evaluationWarning says that the image is an evaluation edition, whose
// clones shut down every hour once the evaluation period is over; "" for
// licensed media. The examples' default ISO is Microsoft's evaluation
// disc, and nothing else would tell that the image expires.
func evaluationWarning(im winmedia.Image) string {
	if !im.Evaluation() {
		return ""
	}
	edition := im.EditionID
	if edition == "" {
		edition = im.DisplayName
	}
	return fmt.Sprintf("Warning: iso_url: image %d %q of the install disc is an evaluation edition (%s): "+
		"once its evaluation period is over, Windows shuts down every hour, and so does every VM made from this image. "+
		"Fine for a lab; for nodes that must outlive the evaluation period, build from licensed media "+
		"(windows.product_key = \"kms\" on volume media, or your product key), or convert each VM (DISM /online /Set-Edition)",
		im.Index, im.Name, edition)
}

// chooseInstallImage finds the image the answer file selects for w among
// the disc's images, or says which key to change and lists the images.
func chooseInstallImage(w autounattend.Windows, media *winmedia.Media) (winmedia.Image, error) {
	index, name := w.InstallImage()
	for _, im := range media.Images {
		if (index > 0 && im.Index == index) || (index == 0 && im.Name == name) {
			return im, nil
		}
	}
	var key, what string
	switch {
	case index > 0:
		key, what = "windows.image_index", fmt.Sprintf("no image %d", index)
	case w.ImageName != "":
		key, what = "windows.image_name", fmt.Sprintf("no image named %q", name)
	default:
		key, what = editionKey(w, media.Images), fmt.Sprintf("no image named %q (version %q, edition %q, experience %q)",
			name, w.Version, orDefault(w.Edition, autounattend.EditionDatacenter), orDefault(w.Experience, autounattend.ExperienceCore))
	}
	list := make([]string, len(media.Images))
	for i, im := range media.Images {
		list[i] = fmt.Sprintf("%d %q", im.Index, im.Name)
		if im.DisplayName != "" {
			list[i] += fmt.Sprintf(" (%s)", im.DisplayName)
		}
	}
	return winmedia.Image{}, fmt.Errorf("%s: the install disc's %s has %s; it has: %s. Set windows.edition and windows.experience to one of these, or windows.image_index to its number",
		key, media.Path, what, strings.Join(list, ", "))
}

// editionKey names the key most likely wrong when the name built from
// version, edition and experience is not on the disc: the experience if
// the edition is there in the other one, the edition if the experience is
// there in another edition, the version if the disc is another release.
func editionKey(w autounattend.Windows, images []winmedia.Image) string {
	has := func(v autounattend.Windows) bool {
		_, name := v.InstallImage()
		for _, im := range images {
			if im.Name == name {
				return true
			}
		}
		return false
	}
	other := func(s, a, b string) string {
		if orDefault(s, a) == a {
			return b
		}
		return a
	}
	v := w
	v.Experience = other(w.Experience, autounattend.ExperienceCore, autounattend.ExperienceDesktop)
	if has(v) {
		return "windows.experience"
	}
	v = w
	v.Edition = other(w.Edition, autounattend.EditionDatacenter, autounattend.EditionStandard)
	if has(v) {
		return "windows.edition"
	}
	v.Experience = other(w.Experience, autounattend.ExperienceCore, autounattend.ExperienceDesktop)
	if has(v) {
		return "windows.edition"
	}
	_, name := w.InstallImage()
	product := strings.TrimSuffix(name, " "+name[strings.LastIndex(name, " ")+1:])
	for _, im := range images {
		if strings.HasPrefix(im.Name, "Windows Server ") && !strings.HasPrefix(im.Name, product+" ") {
			return "windows.version"
		}
	}
	return "windows.edition"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
