// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"fmt"
	"regexp"
	"strings"
)

// Firmware a VM boots with; it decides the disk layout.
const (
	FirmwareBIOS = "bios"
	FirmwareUEFI = "uefi"
)

// Communicators the first-logon bootstrap can open for the build.
const (
	CommunicatorWinRM = "winrm"
	CommunicatorSSH   = "ssh"
)

// How passwords are written into the answer file.
const (
	// PasswordBase64 writes base64(UTF-16LE(password + suffix)) with
	// PlainText false, as Windows System Image Manager does. It hides the
	// password from a casual look; it is not encryption.
	PasswordBase64 = "base64"
	// PasswordPlainText writes the password as is, with PlainText true.
	PasswordPlainText = "plaintext"
)

// ProductKeyKMS asks for the edition's KMS client setup key (volume media).
const ProductKeyKMS = "kms"

// Names on the Windows seed disc.
const (
	WindowsAnswerFile      = "Autounattend.xml"
	WindowsBootstrapScript = "kubenode-bootstrap.ps1"
	// WindowsSeedLabel is the seed disc's volume label. Setup finds the
	// answer file by name on any removable drive, not by label.
	WindowsSeedLabel = "KUBENODE"
)

// Windows describes an unattended install of Windows Server. Field comments
// name the HCL key each field is set by.
type Windows struct {
	// Version is the Windows Server release: "2019", "2022" or "2025". Key: version.
	Version string
	// Edition is "standard" or "datacenter" (default). Key: edition.
	Edition string
	// Experience is "core" (default, Server Core) or "desktop" (Desktop
	// Experience). Key: experience.
	Experience string
	// ImageName selects the install.wim image by /IMAGE/NAME, overriding the
	// name built from version, edition and experience. Key: image_name.
	ImageName string
	// ImageIndex selects the image by /IMAGE/INDEX instead of by name
	// (evaluation ISOs: see EvaluationImageIndex). Key: image_index.
	ImageIndex int
	// Firmware is "uefi" (default) or "bios". Key: firmware.
	Firmware string
	// DiskID is the disk Windows is installed to, as Setup numbers them. Key: disk_id.
	DiskID int
	// VirtioDrivers are the virtio-win driver folders loaded in windowsPE
	// (default viostor, vioscsi, NetKVM). Key: virtio_drivers.
	VirtioDrivers []string
	// SkipVirtio loads no virtio drivers (for hardware Windows already
	// knows, e.g. SATA and e1000). Key: skip_virtio.
	SkipVirtio bool
	// VirtioDriveLetters are the drive letters the virtio-win disc may have
	// in Windows Setup; each folder is listed under each letter, so the
	// answer file does not depend on the order discs are attached in
	// (default D through I). Key: virtio_drive_letters.
	VirtioDriveLetters []string
	// UILanguage, InputLocale, SystemLocale and UserLocale set the language
	// and keyboard (default "en-US"). InputLocale also takes the
	// "0409:00000409" form. Keys: ui_language, input_locale, system_locale, user_locale.
	UILanguage   string
	InputLocale  string
	SystemLocale string
	UserLocale   string
	// TimeZone is a Windows time zone ID, e.g. "UTC" (default) or
	// "Pacific Standard Time". Key: timezone.
	TimeZone string
	// ComputerName is at most 15 letters, digits and hyphens, or "*"
	// (default) for a random name. Key: computer_name.
	ComputerName string
	// Username is the account the build logs in with: "Administrator"
	// (default) or a new local administrator. Key: username.
	Username string
	// Password is that account's password (and the Administrator's). Key: password.
	Password string
	// PasswordEncoding is "base64" (default) or "plaintext". Key: password_encoding.
	PasswordEncoding string
	// ProductKey is empty for evaluation media (no key), "kms" for the
	// edition's KMS client setup key, or a key XXXXX-XXXXX-XXXXX-XXXXX-XXXXX.
	// A key that does not match the image makes Setup fail with "No images
	// are available". Key: product_key.
	ProductKey string
	// Organization and Owner are the registered organization and owner
	// (default "kubenode"). Keys: organization, registered_owner.
	Organization string
	Owner        string
	// Communicator is what the first logon opens for the build: "winrm"
	// (default) or "ssh". Key: communicator.
	Communicator string
	// WinRMUseSSL adds an HTTPS listener on 5986 with a self-signed
	// certificate besides HTTP on 5985. Key: winrm_use_ssl.
	WinRMUseSSL bool
	// SSHAuthorizedKeys are written for the build account when the
	// communicator is ssh. Key: ssh_authorized_keys.
	SSHAuthorizedKeys []string
	// AutoLogonCount is how many automatic logons Setup performs (default 1:
	// the first logon runs the bootstrap). The answer file corrects for
	// Windows adding 1 to LogonCount. Key: autologon_count.
	AutoLogonCount int
	// FirstLogonCommands run at the first logon, in order, before the
	// bootstrap opens the communicator. Key: first_logon_commands.
	FirstLogonCommands []string
}

var (
	localeRE       = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$`)
	inputLocaleRE  = regexp.MustCompile(`^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{8}(;[0-9A-Fa-f]{4}:[0-9A-Fa-f]{8})*$`)
	timeZoneRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 .()+\-_]{0,63}$`)
	computerNameRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,15}$`)
	productKeyRE   = regexp.MustCompile(`^[A-Z0-9]{5}(-[A-Z0-9]{5}){4}$`)
	allDigitsRE    = regexp.MustCompile(`^[0-9]+$`)
	driveLetterRE  = regexp.MustCompile(`^[C-Zc-z]$`)
	sshKeyRE       = regexp.MustCompile(`^(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com) [A-Za-z0-9+/]+={0,3}( .*)?$`)
)

// Limits Windows puts on answer-file values.
const (
	maxFirstLogonCommandLen = 1024 // SynchronousCommand/CommandLine
	maxRunSynchronousLen    = 259  // RunSynchronousCommand/Path
	maxUsernameLen          = 20
	maxPasswordLen          = 127
)

// withDefaults returns w with every unset field given its default.
func (w Windows) withDefaults() Windows {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&w.Edition, EditionDatacenter)
	def(&w.Experience, ExperienceCore)
	def(&w.Firmware, FirmwareUEFI)
	def(&w.UILanguage, "en-US")
	def(&w.InputLocale, w.UILanguage)
	def(&w.SystemLocale, w.UILanguage)
	def(&w.UserLocale, w.UILanguage)
	def(&w.TimeZone, "UTC")
	def(&w.ComputerName, "*")
	def(&w.Username, "Administrator")
	def(&w.PasswordEncoding, PasswordBase64)
	def(&w.Organization, "kubenode")
	def(&w.Owner, "kubenode")
	def(&w.Communicator, CommunicatorWinRM)
	if w.VirtioDrivers == nil {
		w.VirtioDrivers = defaultVirtioDrivers
	}
	if w.VirtioDriveLetters == nil {
		w.VirtioDriveLetters = []string{"D", "E", "F", "G", "H", "I"}
	}
	if w.AutoLogonCount == 0 {
		w.AutoLogonCount = 1
	}
	return w
}

// Validate reports every problem with w at once.
func (w Windows) Validate() error {
	w = w.withDefaults()
	p := &problems{}
	rel, ok := windowsReleases[w.Version]
	if !ok {
		p.add("version", "%q is not a supported Windows Server release; use one of %s", w.Version, quoteList(windowsVersions...))
	}
	if !oneOf(w.Edition, EditionStandard, EditionDatacenter) {
		p.add("edition", "%q is not allowed; use %s", w.Edition, quoteList(EditionStandard, EditionDatacenter))
	}
	if !oneOf(w.Experience, ExperienceCore, ExperienceDesktop) {
		p.add("experience", "%q is not allowed; use %s", w.Experience, quoteList(ExperienceCore, ExperienceDesktop))
	}
	if w.ImageIndex < 0 {
		p.add("image_index", "must be 1 or more (0 selects the image by name)")
	}
	if w.ImageIndex > 0 && w.ImageName != "" {
		p.add("image_name", "set image_name or image_index, not both")
	}
	if why := checkText(w.ImageName, false); why != "" {
		p.add("image_name", "%s", why)
	}
	if !oneOf(w.Firmware, FirmwareBIOS, FirmwareUEFI) {
		p.add("firmware", "%q is not allowed; use %s", w.Firmware, quoteList(FirmwareUEFI, FirmwareBIOS))
	}
	if w.DiskID < 0 {
		p.add("disk_id", "must be 0 or more")
	}
	if !w.SkipVirtio {
		if len(w.VirtioDrivers) == 0 {
			p.add("virtio_drivers", "is empty; list the driver folders to load (e.g. \"viostor\") or set skip_virtio = true")
		}
		for i, d := range w.VirtioDrivers {
			if !oneOf(d, virtioDrivers...) {
				p.add(fmt.Sprintf("virtio_drivers[%d]", i), "%q is not a virtio-win driver folder; use one of %s", d, quoteList(virtioDrivers...))
			}
		}
		if len(w.VirtioDriveLetters) == 0 {
			p.add("virtio_drive_letters", "is empty; list the letters the virtio-win disc may have, e.g. [\"E\"]")
		}
		for i, l := range w.VirtioDriveLetters {
			if !driveLetterRE.MatchString(l) {
				p.add(fmt.Sprintf("virtio_drive_letters[%d]", i), "%q is not a drive letter from C to Z", l)
			}
		}
	}
	if !localeRE.MatchString(w.UILanguage) {
		p.add("ui_language", "%q is not a language tag like \"en-US\"", w.UILanguage)
	}
	if !localeRE.MatchString(w.InputLocale) && !inputLocaleRE.MatchString(w.InputLocale) {
		p.add("input_locale", "%q is not a language tag like \"en-US\" or a keyboard like \"0409:00000409\"", w.InputLocale)
	}
	if !localeRE.MatchString(w.SystemLocale) {
		p.add("system_locale", "%q is not a language tag like \"en-US\"", w.SystemLocale)
	}
	if !localeRE.MatchString(w.UserLocale) {
		p.add("user_locale", "%q is not a language tag like \"en-US\"", w.UserLocale)
	}
	if !timeZoneRE.MatchString(w.TimeZone) {
		p.add("timezone", "%q is not a Windows time zone ID like \"UTC\" or \"W. Europe Standard Time\" (tzutil /l lists them)", w.TimeZone)
	}
	checkComputerName(p, w.ComputerName)
	checkWindowsUser(p, "username", w.Username)
	checkWindowsPassword(p, "password", w.Password)
	if !oneOf(w.PasswordEncoding, PasswordBase64, PasswordPlainText) {
		p.add("password_encoding", "%q is not allowed; use %s", w.PasswordEncoding, quoteList(PasswordBase64, PasswordPlainText))
	}
	if w.ProductKey != "" && w.ProductKey != ProductKeyKMS && !productKeyRE.MatchString(w.ProductKey) {
		p.add("product_key", "must be empty (evaluation media), %q (the edition's KMS client key) or a key like XXXXX-XXXXX-XXXXX-XXXXX-XXXXX in capitals", ProductKeyKMS)
	}
	if ok && w.ProductKey == ProductKeyKMS && rel.KMSClientKeys[w.Edition] == "" {
		p.add("product_key", "no KMS client key is known for edition %q of %s", w.Edition, rel.ProductName)
	}
	checkRequiredText(p, "organization", w.Organization)
	checkRequiredText(p, "registered_owner", w.Owner)
	if !oneOf(w.Communicator, CommunicatorWinRM, CommunicatorSSH) {
		p.add("communicator", "%q is not allowed; use %s", w.Communicator, quoteList(CommunicatorWinRM, CommunicatorSSH))
	}
	if w.Communicator == CommunicatorSSH && len(w.SSHAuthorizedKeys) == 0 {
		p.add("ssh_authorized_keys", "is required when communicator is \"ssh\" (Windows' sshd takes administrators' keys only from a file)")
	}
	checkSSHKeys(p, w.SSHAuthorizedKeys)
	if w.AutoLogonCount < 1 {
		p.add("autologon_count", "must be 1 or more: the first logon runs the bootstrap")
	}
	checkCommands(p, "first_logon_commands", w.FirstLogonCommands, maxFirstLogonCommandLen)
	return p.err("windows")
}

func checkComputerName(p *problems, name string) {
	if name == "*" {
		return
	}
	if !computerNameRE.MatchString(name) || allDigitsRE.MatchString(name) || strings.HasPrefix(name, "-") {
		p.add("computer_name", "%q is not allowed: use \"*\" for a random name, or 1 to 15 letters, digits and hyphens, not all digits, not starting with a hyphen", name)
	}
}

func checkWindowsUser(p *problems, field, name string) {
	if !checkRequiredText(p, field, name) {
		return
	}
	if len([]rune(name)) > maxUsernameLen || strings.ContainsAny(name, `"/\[]:;|=,+*?<>@'`) || strings.HasSuffix(name, ".") || strings.TrimSpace(name) != name {
		p.add(field, "%q is not a Windows user name: at most %d characters, none of \"/\\[]:;|=,+*?<>@' and no trailing dot or surrounding spaces", name, maxUsernameLen)
	}
}

func checkWindowsPassword(p *problems, field, pw string) {
	if pw == "" {
		p.add(field, "is required (Windows Server's password policy also needs 3 of: upper case, lower case, digits, symbols)")
		return
	}
	if why := checkText(pw, false); why != "" {
		p.add(field, "%s", why)
	}
	if len([]rune(pw)) > maxPasswordLen {
		p.add(field, "is longer than %d characters", maxPasswordLen)
	}
}

func checkSSHKeys(p *problems, keys []string) {
	for i, k := range keys {
		field := fmt.Sprintf("ssh_authorized_keys[%d]", i)
		if why := checkText(k, false); why != "" {
			p.add(field, "%s", why)
		} else if !sshKeyRE.MatchString(k) {
			p.add(field, "is not an OpenSSH public key line (\"ssh-ed25519 AAAA... comment\")")
		}
	}
}

func checkCommands(p *problems, key string, cmds []string, maxLen int) {
	for i, c := range cmds {
		field := fmt.Sprintf("%s[%d]", key, i)
		switch {
		case strings.TrimSpace(c) == "":
			p.add(field, "is empty")
		case len(c) > maxLen:
			p.add(field, "is %d characters; Windows runs at most %d", len(c), maxLen)
		default:
			if why := checkText(c, false); why != "" {
				p.add(field, "%s", why)
			}
		}
	}
}

// imageSelector returns the InstallFrom metadata key and value.
func (w Windows) imageSelector() (key, value string) {
	if w.ImageIndex > 0 {
		return "/IMAGE/INDEX", fmt.Sprint(w.ImageIndex)
	}
	if w.ImageName != "" {
		return "/IMAGE/NAME", w.ImageName
	}
	return "/IMAGE/NAME", windowsReleases[w.Version].ProductName + " " + imageSuffix(w.Edition, w.Experience)
}

// productKey returns the key to write, or "" for none.
func (w Windows) productKey() string {
	if w.ProductKey == ProductKeyKMS {
		return windowsReleases[w.Version].KMSClientKeys[w.Edition]
	}
	return w.ProductKey
}

// isBuiltinAdmin reports whether the build account is the built-in Administrator.
func (w Windows) isBuiltinAdmin() bool { return strings.EqualFold(w.Username, "Administrator") }
