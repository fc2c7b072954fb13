// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

// This file is the one place Windows release data lives: adding a release is
// one row in windowsReleases.

// Editions and installation options a user picks with "edition" and
// "experience".
const (
	EditionStandard   = "standard"
	EditionDatacenter = "datacenter"

	ExperienceCore    = "core"    // Server Core, no desktop
	ExperienceDesktop = "desktop" // Desktop Experience
)

// windowsRelease is one Windows Server release.
type windowsRelease struct {
	// ProductName is the prefix of the install.wim image names,
	// e.g. "Windows Server 2022" in "Windows Server 2022 SERVERDATACENTERCORE".
	ProductName string
	// VirtioDir is the OS folder on the virtio-win disc: <driver>\<VirtioDir>\amd64.
	VirtioDir string
	// KMSClientKeys are Microsoft's published Generic Volume License Keys
	// (KMS client setup keys), by edition. They install volume media and
	// activate only against a KMS host.
	KMSClientKeys map[string]string
}

var windowsReleases = map[string]windowsRelease{
	"2019": {
		ProductName: "Windows Server 2019",
		VirtioDir:   "2k19",
		KMSClientKeys: map[string]string{
			EditionDatacenter: "WMDGN-G9PQG-XVVXX-R3X43-63DFG",
			EditionStandard:   "N69G4-B89J2-4G8F4-WWYCC-J464C",
		},
	},
	"2022": {
		ProductName: "Windows Server 2022",
		VirtioDir:   "2k22",
		KMSClientKeys: map[string]string{
			EditionDatacenter: "WX4NM-KYWYW-QJJR4-XV3QB-6VM33",
			EditionStandard:   "VDYBN-27WPP-V4HQT-9VMD4-VMK7H",
		},
	},
	"2025": {
		ProductName: "Windows Server 2025",
		VirtioDir:   "2k25",
		KMSClientKeys: map[string]string{
			EditionDatacenter: "D764K-2NDRG-47T6Q-P8T8W-YP6DF",
			EditionStandard:   "TVRH6-WHNXV-R9WG3-9XRFY-MY832",
		},
	},
}

// windowsVersions lists the supported releases in order, for messages.
var windowsVersions = []string{"2019", "2022", "2025"}

// imageSuffix is the part of the image name after the product name.
func imageSuffix(edition, experience string) string {
	s := "SERVERDATACENTER"
	if edition == EditionStandard {
		s = "SERVERSTANDARD"
	}
	if experience == ExperienceCore {
		s += "CORE"
	}
	return s
}

// EvaluationImageIndex is the /IMAGE/INDEX of an edition on Microsoft's
// evaluation ISOs, which hold four images: Standard Core, Standard Desktop,
// Datacenter Core, Datacenter Desktop.
func EvaluationImageIndex(edition, experience string) int {
	i := 1
	if edition == EditionDatacenter {
		i = 3
	}
	if experience == ExperienceDesktop {
		i++
	}
	return i
}

// Default virtio-win drivers loaded in windowsPE: storage (virtio-blk and
// virtio-scsi) so Setup sees the disk, and the network card so the first
// logon has a network.
var defaultVirtioDrivers = []string{"viostor", "vioscsi", "NetKVM"}

// virtioDrivers are the driver folders known on the virtio-win disc.
var virtioDrivers = []string{"viostor", "vioscsi", "NetKVM", "vioserial", "Balloon", "qxldod", "viorng", "vioinput", "pvpanic"}
