// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

// InstallImage is how the answer file picks the install.wim image: by
// index when index is above 0, else by name (/IMAGE/NAME), which is
// image_name or the name Microsoft gives the version, edition and
// experience, e.g. "Windows Server 2022 SERVERDATACENTERCORE". A builder
// that can read the install disc checks it against the disc's images.
func (w Windows) InstallImage() (index int, name string) {
	w = w.withDefaults()
	if w.ImageIndex > 0 {
		return w.ImageIndex, ""
	}
	_, name = w.imageSelector()
	return 0, name
}
