// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInstallImageIsWhatTheAnswerFileSelects(t *testing.T) {
	for _, tc := range []struct {
		w         Windows
		index     int
		name, xml string
	}{
		{Windows{Version: "2022"}, 0, "Windows Server 2022 SERVERDATACENTERCORE", "<Value>Windows Server 2022 SERVERDATACENTERCORE</Value>"},
		{Windows{Version: "2019", Edition: "standard", Experience: "desktop"}, 0, "Windows Server 2019 SERVERSTANDARD", "<Value>Windows Server 2019 SERVERSTANDARD</Value>"},
		{Windows{Version: "2025", ImageName: "Custom"}, 0, "Custom", "<Value>Custom</Value>"},
		{Windows{Version: "2025", ImageIndex: 4}, 4, "", "<Key>/IMAGE/INDEX</Key>"},
	} {
		index, name := tc.w.InstallImage()
		assert.Equal(t, tc.index, index)
		assert.Equal(t, tc.name, name)
		tc.w.Password = "Passw0rd!"
		xml, err := RenderWindows(tc.w)
		if assert.NoError(t, err) {
			assert.Contains(t, string(xml), tc.xml)
		}
	}
}
