// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"unicode/utf16"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
)

// The answer file is built from these structs, so encoding/xml escapes every
// value. A component holds only the elements its name uses; empty ones are
// omitted.

const (
	unattendNS = "urn:schemas-microsoft-com:unattend"
	wcmNS      = "http://schemas.microsoft.com/WMIConfig/2002/State"
)

// Configuration passes, in the order Setup runs them.
const (
	passWindowsPE         = "windowsPE"
	passOfflineServicing  = "offlineServicing"
	passSpecialize        = "specialize"
	passOOBESystem        = "oobeSystem"
	componentArch         = "amd64"
	componentToken        = "31bf3856ad364e35"
	componentLanguage     = "neutral"
	componentVersionScope = "nonSxS"
)

type xUnattend struct {
	XMLName  xml.Name    `xml:"unattend"`
	Xmlns    string      `xml:"xmlns,attr"`
	XmlnsWcm string      `xml:"xmlns:wcm,attr"`
	Settings []xSettings `xml:"settings"`
}

type xSettings struct {
	Pass       string        `xml:"pass,attr"`
	Components []*xComponent `xml:"component"`
}

type xComponent struct {
	Name         string `xml:"name,attr"`
	Arch         string `xml:"processorArchitecture,attr"`
	Token        string `xml:"publicKeyToken,attr"`
	Language     string `xml:"language,attr"`
	VersionScope string `xml:"versionScope,attr"`

	// Microsoft-Windows-International-Core(-WinPE)
	SetupUILanguage *xSetupUILanguage `xml:"SetupUILanguage,omitempty"`
	InputLocale     string            `xml:"InputLocale,omitempty"`
	SystemLocale    string            `xml:"SystemLocale,omitempty"`
	UILanguage      string            `xml:"UILanguage,omitempty"`
	UserLocale      string            `xml:"UserLocale,omitempty"`
	// Microsoft-Windows-PnpCustomizationsWinPE
	DriverPaths *xDriverPaths `xml:"DriverPaths,omitempty"`
	// Microsoft-Windows-Setup
	DiskConfiguration *xDiskConfiguration `xml:"DiskConfiguration,omitempty"`
	ImageInstall      *xImageInstall      `xml:"ImageInstall,omitempty"`
	UserData          *xUserData          `xml:"UserData,omitempty"`
	// Microsoft-Windows-LUA-Settings
	EnableLUA string `xml:"EnableLUA,omitempty"`
	// Microsoft-Windows-Shell-Setup
	ComputerName           string               `xml:"ComputerName,omitempty"`
	RegisteredOrganization string               `xml:"RegisteredOrganization,omitempty"`
	RegisteredOwner        string               `xml:"RegisteredOwner,omitempty"`
	TimeZone               string               `xml:"TimeZone,omitempty"`
	OOBE                   *xOOBE               `xml:"OOBE,omitempty"`
	UserAccounts           *xUserAccounts       `xml:"UserAccounts,omitempty"`
	AutoLogon              *xAutoLogon          `xml:"AutoLogon,omitempty"`
	FirstLogonCommands     *xFirstLogonCommands `xml:"FirstLogonCommands,omitempty"`
	// Microsoft-Windows-ServerManager-SvrMgrNc
	DoNotOpenServerManagerAtLogon string `xml:"DoNotOpenServerManagerAtLogon,omitempty"`
	// Microsoft-Windows-Security-SPP-UX
	SkipAutoActivation string `xml:"SkipAutoActivation,omitempty"`
	// Microsoft-Windows-Deployment
	RunSynchronous *xRunSynchronous `xml:"RunSynchronous,omitempty"`
}

// List wrappers: encoding/xml writes an empty parent for an empty slice
// tagged "a>b" even with omitempty; a nil pointer writes nothing.
type xDriverPaths struct {
	Items []xPathAndCredentials `xml:"PathAndCredentials"`
}

type xFirstLogonCommands struct {
	Items []xSynchronousCommand `xml:"SynchronousCommand"`
}

type xRunSynchronous struct {
	Items []xRunSynchronousCommand `xml:"RunSynchronousCommand"`
}

type xLocalAccounts struct {
	Items []xLocalAccount `xml:"LocalAccount"`
}

type xSetupUILanguage struct {
	UILanguage string `xml:"UILanguage"`
}

type xPathAndCredentials struct {
	Action   string `xml:"wcm:action,attr"`
	KeyValue string `xml:"wcm:keyValue,attr"`
	Path     string `xml:"Path"`
}

type xDiskConfiguration struct {
	Disk xDisk `xml:"Disk"`
}

type xDisk struct {
	Action           string             `xml:"wcm:action,attr"`
	DiskID           int                `xml:"DiskID"`
	WillWipeDisk     string             `xml:"WillWipeDisk"`
	CreatePartitions []xCreatePartition `xml:"CreatePartitions>CreatePartition"`
	ModifyPartitions []xModifyPartition `xml:"ModifyPartitions>ModifyPartition"`
}

type xCreatePartition struct {
	Action string `xml:"wcm:action,attr"`
	Order  int    `xml:"Order"`
	Type   string `xml:"Type"`
	Size   int    `xml:"Size,omitempty"`
	Extend string `xml:"Extend,omitempty"`
}

type xModifyPartition struct {
	Action      string `xml:"wcm:action,attr"`
	Order       int    `xml:"Order"`
	PartitionID int    `xml:"PartitionID"`
	Active      string `xml:"Active,omitempty"`
	Format      string `xml:"Format,omitempty"`
	Label       string `xml:"Label,omitempty"`
	Letter      string `xml:"Letter,omitempty"`
	TypeID      string `xml:"TypeID,omitempty"`
}

type xImageInstall struct {
	OSImage xOSImage `xml:"OSImage"`
}

type xOSImage struct {
	InstallFrom xInstallFrom `xml:"InstallFrom"`
	InstallTo   xInstallTo   `xml:"InstallTo"`
	WillShowUI  string       `xml:"WillShowUI"`
}

type xInstallFrom struct {
	MetaData xMetaData `xml:"MetaData"`
}

type xMetaData struct {
	Action string `xml:"wcm:action,attr"`
	Key    string `xml:"Key"`
	Value  string `xml:"Value"`
}

type xInstallTo struct {
	DiskID      int `xml:"DiskID"`
	PartitionID int `xml:"PartitionID"`
}

type xUserData struct {
	AcceptEula   string      `xml:"AcceptEula"`
	FullName     string      `xml:"FullName"`
	Organization string      `xml:"Organization"`
	ProductKey   xProductKey `xml:"ProductKey"`
}

type xProductKey struct {
	Key        string `xml:"Key,omitempty"`
	WillShowUI string `xml:"WillShowUI"`
}

type xOOBE struct {
	HideEULAPage              string `xml:"HideEULAPage"`
	HideLocalAccountScreen    string `xml:"HideLocalAccountScreen"`
	HideOEMRegistrationScreen string `xml:"HideOEMRegistrationScreen"`
	HideOnlineAccountScreens  string `xml:"HideOnlineAccountScreens"`
	HideWirelessSetupInOOBE   string `xml:"HideWirelessSetupInOOBE"`
	NetworkLocation           string `xml:"NetworkLocation"`
	ProtectYourPC             int    `xml:"ProtectYourPC"`
	SkipMachineOOBE           string `xml:"SkipMachineOOBE"`
	SkipUserOOBE              string `xml:"SkipUserOOBE"`
}

type xUserAccounts struct {
	AdministratorPassword xPassword       `xml:"AdministratorPassword"`
	LocalAccounts         *xLocalAccounts `xml:"LocalAccounts,omitempty"`
}

type xPassword struct {
	Value     string `xml:"Value"`
	PlainText string `xml:"PlainText"`
}

type xLocalAccount struct {
	Action      string    `xml:"wcm:action,attr"`
	Password    xPassword `xml:"Password"`
	Description string    `xml:"Description"`
	DisplayName string    `xml:"DisplayName"`
	Group       string    `xml:"Group"`
	Name        string    `xml:"Name"`
}

type xAutoLogon struct {
	Password   xPassword `xml:"Password"`
	Domain     string    `xml:"Domain"`
	Enabled    string    `xml:"Enabled"`
	LogonCount int       `xml:"LogonCount"`
	Username   string    `xml:"Username"`
}

type xSynchronousCommand struct {
	Action      string `xml:"wcm:action,attr"`
	Order       int    `xml:"Order"`
	CommandLine string `xml:"CommandLine"`
	Description string `xml:"Description"`
}

type xRunSynchronousCommand struct {
	Action      string `xml:"wcm:action,attr"`
	Order       int    `xml:"Order"`
	Path        string `xml:"Path"`
	Description string `xml:"Description"`
}

func component(name string) *xComponent {
	return &xComponent{
		Name:         name,
		Arch:         componentArch,
		Token:        componentToken,
		Language:     componentLanguage,
		VersionScope: componentVersionScope,
	}
}

// Password suffixes Windows appends before encoding (see PasswordBase64).
const (
	suffixAdministratorPassword = "AdministratorPassword"
	suffixPassword              = "Password"
)

// EncodeUnattendPassword returns base64(UTF-16LE(password + suffix)), the
// form of a password with PlainText false.
func EncodeUnattendPassword(password, suffix string) string {
	u := utf16.Encode([]rune(password + suffix))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(b[2*i:], c)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func password(encoding, pw, suffix string) xPassword {
	if encoding == PasswordPlainText {
		return xPassword{Value: pw, PlainText: "true"}
	}
	return xPassword{Value: EncodeUnattendPassword(pw, suffix), PlainText: "false"}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// diskLayout returns the partitions for firmware and the partition Windows
// is installed to. UEFI: EFI system (100 MB FAT32), MSR (16 MB), Windows.
// BIOS: active system reserved (350 MB NTFS), Windows.
func diskLayout(firmware string) ([]xCreatePartition, []xModifyPartition, int) {
	if firmware == FirmwareBIOS {
		return []xCreatePartition{
				{Action: "add", Order: 1, Type: "Primary", Size: 350},
				{Action: "add", Order: 2, Type: "Primary", Extend: "true"},
			}, []xModifyPartition{
				{Action: "add", Order: 1, PartitionID: 1, Active: "true", Format: "NTFS", Label: "System Reserved"},
				{Action: "add", Order: 2, PartitionID: 2, Format: "NTFS", Label: "Windows", Letter: "C"},
			}, 2
	}
	return []xCreatePartition{
			{Action: "add", Order: 1, Type: "EFI", Size: 100},
			{Action: "add", Order: 2, Type: "MSR", Size: 16},
			{Action: "add", Order: 3, Type: "Primary", Extend: "true"},
		}, []xModifyPartition{
			{Action: "add", Order: 1, PartitionID: 1, Format: "FAT32", Label: "System"},
			{Action: "add", Order: 2, PartitionID: 2},
			{Action: "add", Order: 3, PartitionID: 3, Format: "NTFS", Label: "Windows", Letter: "C"},
		}, 3
}

func international(name, ui, input, system, user string) *xComponent {
	c := component(name)
	c.InputLocale, c.SystemLocale, c.UILanguage, c.UserLocale = input, system, ui, user
	return c
}

func oobeSkipped() *xOOBE {
	return &xOOBE{
		HideEULAPage:              "true",
		HideLocalAccountScreen:    "true",
		HideOEMRegistrationScreen: "true",
		HideOnlineAccountScreens:  "true",
		HideWirelessSetupInOOBE:   "true",
		NetworkLocation:           "Work",
		ProtectYourPC:             3,
		SkipMachineOOBE:           "true",
		SkipUserOOBE:              "true",
	}
}

// AutoLogonCountResetCommand is the first first-logon command of a build
// with one automatic logon: Windows adds 1 to the answer file's LogonCount,
// and setting the Winlogon AutoLogonCount value to 0 at the first logon is
// Microsoft's workaround (Microsoft Learn, Microsoft-Windows-Shell-Setup |
// AutoLogon | LogonCount, "LogonCount known issue"). Without it a restart
// during the build logs the build account on again.
const AutoLogonCountResetCommand = `reg.exe ADD "HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Winlogon" /v AutoLogonCount /t REG_DWORD /d 0 /f`

// RTCIsUniversalCommand makes Windows keep its hardware clock (RTC) in UTC,
// as Linux does, instead of local time. kubenode-libvirt gives every VM a
// UTC RTC, so the guest's time is right whatever the hypervisor's time zone.
// It runs in the specialize pass (Microsoft-Windows-Deployment
// RunSynchronous), as kubernetes-sigs/image-builder's Windows Server 2022 EFI
// answer file (packer/ova/windows/windows-2022-efi/autounattend.xml) does;
// Setup restarts after specialize, so the kernel reads the RTC as UTC from
// that restart on, before the first logon.
const RTCIsUniversalCommand = `%SystemRoot%\System32\reg.exe ADD "HKLM\SYSTEM\CurrentControlSet\Control\TimeZoneInformation" /v RealTimeIsUniversal /t REG_DWORD /d 1 /f`

// RenderWindows returns the Autounattend.xml for w.
func RenderWindows(w Windows) ([]byte, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	w = w.withDefaults()

	// windowsPE
	intlPE := international("Microsoft-Windows-International-Core-WinPE", w.UILanguage, w.InputLocale, w.SystemLocale, w.UserLocale)
	intlPE.SetupUILanguage = &xSetupUILanguage{UILanguage: w.UILanguage}
	pe := []*xComponent{intlPE}
	if !w.SkipVirtio {
		pnp := component("Microsoft-Windows-PnpCustomizationsWinPE")
		pnp.DriverPaths = &xDriverPaths{}
		rel := windowsReleases[w.Version]
		for _, letter := range w.VirtioDriveLetters {
			for _, drv := range w.VirtioDrivers {
				pnp.DriverPaths.Items = append(pnp.DriverPaths.Items, xPathAndCredentials{
					Action:   "add",
					KeyValue: fmt.Sprint(len(pnp.DriverPaths.Items) + 1),
					Path:     fmt.Sprintf(`%s:\%s\%s\amd64`, upper(letter), drv, rel.VirtioDir),
				})
			}
		}
		pe = append(pe, pnp)
	}
	create, modify, installTo := diskLayout(w.Firmware)
	imgKey, imgValue := w.imageSelector()
	setup := component("Microsoft-Windows-Setup")
	setup.DiskConfiguration = &xDiskConfiguration{Disk: xDisk{
		Action: "add", DiskID: w.DiskID, WillWipeDisk: "true",
		CreatePartitions: create, ModifyPartitions: modify,
	}}
	setup.ImageInstall = &xImageInstall{OSImage: xOSImage{
		InstallFrom: xInstallFrom{MetaData: xMetaData{Action: "add", Key: imgKey, Value: imgValue}},
		InstallTo:   xInstallTo{DiskID: w.DiskID, PartitionID: installTo},
		WillShowUI:  "OnError",
	}}
	setup.UserData = &xUserData{
		AcceptEula: "true", FullName: w.Owner, Organization: w.Organization,
		ProductKey: xProductKey{Key: w.productKey(), WillShowUI: "OnError"},
	}
	pe = append(pe, setup)

	// offlineServicing: no UAC prompts for the build account's remote commands.
	lua := component("Microsoft-Windows-LUA-Settings")
	lua.EnableLUA = "false"

	// specialize
	shellSpec := component("Microsoft-Windows-Shell-Setup")
	shellSpec.ComputerName = w.ComputerName
	shellSpec.RegisteredOrganization = w.Organization
	shellSpec.RegisteredOwner = w.Owner
	shellSpec.TimeZone = w.TimeZone
	svrMgr := component("Microsoft-Windows-ServerManager-SvrMgrNc")
	svrMgr.DoNotOpenServerManagerAtLogon = "true"
	spp := component("Microsoft-Windows-Security-SPP-UX")
	spp.SkipAutoActivation = "true"
	deploy := component("Microsoft-Windows-Deployment")
	deploy.RunSynchronous = &xRunSynchronous{Items: []xRunSynchronousCommand{{
		Action: "add", Order: 1, Path: RTCIsUniversalCommand,
		Description: "Keep the hardware clock (RTC) in UTC",
	}}}

	// oobeSystem
	shellOOBE := component("Microsoft-Windows-Shell-Setup")
	shellOOBE.OOBE = oobeSkipped()
	shellOOBE.UserAccounts = &xUserAccounts{AdministratorPassword: password(w.PasswordEncoding, w.Password, suffixAdministratorPassword)}
	if !w.isBuiltinAdmin() {
		shellOOBE.UserAccounts.LocalAccounts = &xLocalAccounts{Items: []xLocalAccount{{
			Action: "add", Password: password(w.PasswordEncoding, w.Password, suffixPassword),
			Description: "kubenode build account", DisplayName: w.Username, Group: "Administrators", Name: w.Username,
		}}}
	}
	// Windows adds 1 to a LogonCount above 0 (Microsoft Learn,
	// Microsoft-Windows-Shell-Setup | AutoLogon | LogonCount, "LogonCount
	// known issue"): N automatic logons are LogonCount N-1, and exactly one
	// is LogonCount 1 with the first first-logon command setting the
	// registry's AutoLogonCount to 0.
	logonCount := w.AutoLogonCount - 1
	type command struct{ line, desc string }
	var cmds []command
	if w.AutoLogonCount == 1 {
		logonCount = 1
		cmds = append(cmds, command{AutoLogonCountResetCommand, "Reset AutoLogonCount to 0: Windows adds 1 to LogonCount, this keeps it to one automatic logon"})
	}
	shellOOBE.AutoLogon = &xAutoLogon{
		Password: password(w.PasswordEncoding, w.Password, suffixPassword),
		Domain:   ".", Enabled: "true", LogonCount: logonCount, Username: w.Username,
	}
	for i, c := range w.FirstLogonCommands {
		cmds = append(cmds, command{c, fmt.Sprintf("first_logon_commands[%d]", i)})
	}
	cmds = append(cmds, command{bootstrapCommandLine(), "Run " + WindowsBootstrapScript + " from the seed disc: open the " + w.Communicator + " communicator"})
	shellOOBE.FirstLogonCommands = &xFirstLogonCommands{}
	for i, c := range cmds {
		shellOOBE.FirstLogonCommands.Items = append(shellOOBE.FirstLogonCommands.Items, xSynchronousCommand{
			Action: "add", Order: i + 1, CommandLine: c.line, Description: c.desc,
		})
	}

	u := xUnattend{
		Xmlns: unattendNS, XmlnsWcm: wcmNS,
		Settings: []xSettings{
			{Pass: passWindowsPE, Components: pe},
			{Pass: passOfflineServicing, Components: []*xComponent{lua}},
			{Pass: passSpecialize, Components: []*xComponent{shellSpec, deploy, svrMgr, spp}},
			{Pass: passOOBESystem, Components: []*xComponent{
				international("Microsoft-Windows-International-Core", w.UILanguage, w.InputLocale, w.SystemLocale, w.UserLocale),
				shellOOBE,
			}},
		},
	}
	return marshalUnattend(u)
}

func marshalUnattend(u xUnattend) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n")
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(u); err != nil {
		return nil, fmt.Errorf("encoding answer file: %w", err)
	}
	buf.WriteString("\n")
	return buf.Bytes(), nil
}

func upper(s string) string { return string(bytes.ToUpper([]byte(s))) }

// JoinerServiceName is the Windows service kubenode-bake installs for the
// joiner. It is installed disabled, so it cannot run in the image being
// built; the post-sysprep answer file enables it on the clone's first boot.
const JoinerServiceName = units.JoinerServiceName

// WindowsFirstBoot describes the answer file sysprep applies when a
// generalized image first boots: OOBE skipped, the Administrator password
// set, and commands run as SYSTEM in the specialize pass (by default,
// enabling the joiner service so it starts on that boot).
type WindowsFirstBoot struct {
	// ComputerName: "*" (default) or at most 15 letters, digits, hyphens. Key: computer_name.
	ComputerName string
	// TimeZone: Windows time zone ID (default "UTC"). Key: timezone.
	TimeZone string
	// Language settings as for Windows (default "en-US").
	UILanguage, InputLocale, SystemLocale, UserLocale string
	// Password is the Administrator password of the clone. Key: password.
	Password string
	// PasswordEncoding: "base64" (default) or "plaintext". Key: password_encoding.
	PasswordEncoding string
	// Organization and Owner (default "kubenode"). Keys: organization, registered_owner.
	Organization, Owner string
	// Commands run as SYSTEM, in order, in the specialize pass; each at most
	// 259 characters. Default: set the joiner service to start automatically.
	// Key: commands.
	Commands []string
}

// DefaultFirstBootCommands enable the joiner service: it starts with the
// other automatic services when the clone finishes setup.
var DefaultFirstBootCommands = []string{
	"sc.exe config " + JoinerServiceName + " start= auto",
}

func (f WindowsFirstBoot) withDefaults() WindowsFirstBoot {
	w := Windows{
		ComputerName: f.ComputerName, TimeZone: f.TimeZone,
		UILanguage: f.UILanguage, InputLocale: f.InputLocale, SystemLocale: f.SystemLocale, UserLocale: f.UserLocale,
		PasswordEncoding: f.PasswordEncoding, Organization: f.Organization, Owner: f.Owner,
	}.withDefaults()
	f.ComputerName, f.TimeZone = w.ComputerName, w.TimeZone
	f.UILanguage, f.InputLocale, f.SystemLocale, f.UserLocale = w.UILanguage, w.InputLocale, w.SystemLocale, w.UserLocale
	f.PasswordEncoding, f.Organization, f.Owner = w.PasswordEncoding, w.Organization, w.Owner
	if f.Commands == nil {
		f.Commands = DefaultFirstBootCommands
	}
	return f
}

// Validate reports every problem with f at once.
func (f WindowsFirstBoot) Validate() error {
	f = f.withDefaults()
	p := &problems{}
	checkComputerName(p, f.ComputerName)
	if !timeZoneRE.MatchString(f.TimeZone) {
		p.add("timezone", "%q is not a Windows time zone ID like \"UTC\" (tzutil /l lists them)", f.TimeZone)
	}
	for _, l := range []struct{ key, v string }{{"ui_language", f.UILanguage}, {"system_locale", f.SystemLocale}, {"user_locale", f.UserLocale}} {
		if !localeRE.MatchString(l.v) {
			p.add(l.key, "%q is not a language tag like \"en-US\"", l.v)
		}
	}
	if !localeRE.MatchString(f.InputLocale) && !inputLocaleRE.MatchString(f.InputLocale) {
		p.add("input_locale", "%q is not a language tag like \"en-US\" or a keyboard like \"0409:00000409\"", f.InputLocale)
	}
	checkWindowsPassword(p, "password", f.Password)
	if !oneOf(f.PasswordEncoding, PasswordBase64, PasswordPlainText) {
		p.add("password_encoding", "%q is not allowed; use %s", f.PasswordEncoding, quoteList(PasswordBase64, PasswordPlainText))
	}
	checkRequiredText(p, "organization", f.Organization)
	checkRequiredText(p, "registered_owner", f.Owner)
	checkCommands(p, "commands", f.Commands, maxRunSynchronousLen)
	return p.err("windows first boot")
}

// RenderWindowsFirstBoot returns the unattend.xml to pass to sysprep
// (/unattend:) for the generalized image's first boot.
func RenderWindowsFirstBoot(f WindowsFirstBoot) ([]byte, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	f = f.withDefaults()
	shellSpec := component("Microsoft-Windows-Shell-Setup")
	shellSpec.ComputerName = f.ComputerName
	shellSpec.RegisteredOrganization = f.Organization
	shellSpec.RegisteredOwner = f.Owner
	shellSpec.TimeZone = f.TimeZone
	deploy := component("Microsoft-Windows-Deployment")
	deploy.RunSynchronous = &xRunSynchronous{}
	for i, c := range f.Commands {
		deploy.RunSynchronous.Items = append(deploy.RunSynchronous.Items, xRunSynchronousCommand{
			Action: "add", Order: i + 1, Path: c, Description: fmt.Sprintf("commands[%d]", i),
		})
	}
	svrMgr := component("Microsoft-Windows-ServerManager-SvrMgrNc")
	svrMgr.DoNotOpenServerManagerAtLogon = "true"
	shellOOBE := component("Microsoft-Windows-Shell-Setup")
	shellOOBE.OOBE = oobeSkipped()
	shellOOBE.UserAccounts = &xUserAccounts{AdministratorPassword: password(f.PasswordEncoding, f.Password, suffixAdministratorPassword)}
	u := xUnattend{
		Xmlns: unattendNS, XmlnsWcm: wcmNS,
		Settings: []xSettings{
			{Pass: passSpecialize, Components: []*xComponent{shellSpec, deploy, svrMgr}},
			{Pass: passOOBESystem, Components: []*xComponent{
				international("Microsoft-Windows-International-Core", f.UILanguage, f.InputLocale, f.SystemLocale, f.UserLocale),
				shellOOBE,
			}},
		},
	}
	return marshalUnattend(u)
}
