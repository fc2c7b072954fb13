// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/psquote"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
)

func baseWindows() Windows {
	return Windows{Version: "2022", Password: "Kube&Node<1>\"pw'"}
}

// windowsMatrix is every release × firmware × experience, each with a
// different edition and key mode so the goldens cover those too.
func windowsMatrix() map[string]Windows {
	m := map[string]Windows{}
	for _, v := range windowsVersions {
		for _, fw := range []string{FirmwareBIOS, FirmwareUEFI} {
			for _, exp := range []string{ExperienceCore, ExperienceDesktop} {
				w := baseWindows()
				w.Version, w.Firmware, w.Experience = v, fw, exp
				if exp == ExperienceDesktop {
					w.Edition = EditionStandard
					w.ProductKey = ProductKeyKMS
				}
				if fw == FirmwareBIOS {
					w.PasswordEncoding = PasswordPlainText
				}
				m[fmt.Sprintf("windows-%s-%s-%s", v, fw, exp)] = w
			}
		}
	}
	return m
}

func TestRenderWindowsGolden(t *testing.T) {
	for name, w := range windowsMatrix() {
		t.Run(name, func(t *testing.T) {
			out, err := RenderWindows(w)
			require.NoError(t, err)
			golden.Assert(t, "windows/"+name+".xml", out)
		})
	}
	t.Run("custom", func(t *testing.T) {
		w := baseWindows()
		w.Username = "packer"
		w.ComputerName = "win-node-01"
		w.TimeZone = "W. Europe Standard Time"
		w.UILanguage, w.InputLocale = "de-DE", "0407:00000407"
		w.ImageIndex = 2
		w.ProductKey = "AAAAA-BBBBB-CCCCC-DDDDD-EEEEE"
		w.VirtioDrivers = []string{"viostor", "NetKVM", "Balloon"}
		w.VirtioDriveLetters = []string{"E"}
		w.FirstLogonCommands = []string{`cmd /c echo "a & b" > C:\first.txt`}
		out, err := RenderWindows(w)
		require.NoError(t, err)
		golden.Assert(t, "windows/windows-2022-custom.xml", out)
	})
}

func TestRenderWindowsFirstBootGolden(t *testing.T) {
	out, err := RenderWindowsFirstBoot(WindowsFirstBoot{Password: "Clone&Pass<1>"})
	require.NoError(t, err)
	golden.Assert(t, "windows/firstboot-default.xml", out)

	out, err = RenderWindowsFirstBoot(WindowsFirstBoot{
		Password: "Clone&Pass<1>", PasswordEncoding: PasswordPlainText, ComputerName: "node-7",
		Commands: []string{`sc.exe config kubenode-joiner start= auto`, `cmd /c echo joined > C:\k\first-boot.txt`},
	})
	require.NoError(t, err)
	golden.Assert(t, "windows/firstboot-custom.xml", out)

	root := parseXML(t, out)
	specialize := root.pass(t, passSpecialize)
	deploy := specialize.component(t, "Microsoft-Windows-Deployment")
	cmds := deploy.all("RunSynchronous/RunSynchronousCommand")
	require.Len(t, cmds, 2)
	assertOrders(t, cmds)
	assert.Equal(t, `cmd /c echo joined > C:\k\first-boot.txt`, cmds[1].text("Path"))
	assert.Nil(t, root.find("settings/component/AutoLogon"), "a clone must not log on automatically")
}

func bootstrapCases() map[string]Windows {
	winrm := baseWindows()
	tls := baseWindows()
	tls.WinRMUseSSL = true
	ssh := baseWindows()
	ssh.Communicator = CommunicatorSSH
	ssh.Username = "packer"
	ssh.SSHAuthorizedKeys = []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG9v it’s-me@host", "ssh-rsa AAAAB3NzaC1yc2E= ops"}
	return map[string]Windows{"bootstrap-winrm.ps1": winrm, "bootstrap-winrm-https.ps1": tls, "bootstrap-ssh.ps1": ssh}
}

func TestRenderWindowsBootstrapGolden(t *testing.T) {
	for name, w := range bootstrapCases() {
		t.Run(name, func(t *testing.T) {
			out, err := RenderWindowsBootstrap(w)
			require.NoError(t, err)
			golden.Assert(t, "windows/"+name, out)
			s := string(out)
			assert.True(t, strings.HasPrefix(s, psquote.UTF8BOM), "script must start with a UTF-8 BOM")
			// The gate is opened first and closed last.
			gate := strings.Index(s, "New-NetFirewallRule -Name 'kubenode-build-gate'")
			ungate := strings.Index(s, "Remove-NetFirewallRule -Name 'kubenode-build-gate'")
			require.True(t, gate > 0 && ungate > gate, "gate rule must come first and be removed last")
			for _, startsService := range []string{"Restart-Service -Name 'WinRM'", "Start-Service -Name 'sshd'"} {
				if i := strings.Index(s, startsService); i >= 0 {
					assert.Greater(t, i, gate)
					assert.Less(t, i, ungate)
				}
			}
			assert.NotContains(t, strings.ToLower(s), "wmic")
			assert.NotContains(t, s, w.Password, "the bootstrap script must not carry the password")
		})
	}
}

func TestWindowsSeedDisc(t *testing.T) {
	d, err := WindowsSeed(baseWindows())
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, WriteISO(&buf, d))
	back, err := ReadISO(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, WindowsSeedLabel, back.Label)
	// Setup searches for Autounattend.xml case-insensitively (CDFS upcases both sides).
	data, err := back.File("Autounattend.xml")
	require.NoError(t, err)
	want, _ := RenderWindows(baseWindows())
	assert.Equal(t, string(want), string(data))
	_, err = back.File(WindowsBootstrapScript)
	require.NoError(t, err)
}

// The structural checks below read the answer file as XML, never as text.

type xnode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []*xnode   `xml:",any"`
	Text     string     `xml:",chardata"`
}

func parseXML(t *testing.T, b []byte) *xnode {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var n xnode
	require.NoError(t, dec.Decode(&n), "answer file is not well-formed XML")
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return &n
		}
		require.NoError(t, err)
		cd, ok := tok.(xml.CharData)
		require.True(t, ok && len(bytes.TrimSpace(cd)) == 0, "trailing content after the root element: %v", tok)
	}
}

func (n *xnode) attr(local string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// all returns the descendants along a slash-separated path of local names.
func (n *xnode) all(path string) []*xnode {
	cur := []*xnode{n}
	for _, part := range strings.Split(path, "/") {
		var next []*xnode
		for _, c := range cur {
			for _, ch := range c.Children {
				if ch.XMLName.Local == part {
					next = append(next, ch)
				}
			}
		}
		cur = next
	}
	return cur
}

func (n *xnode) find(path string) *xnode {
	if all := n.all(path); len(all) > 0 {
		return all[0]
	}
	return nil
}

func (n *xnode) text(path string) string {
	if f := n.find(path); f != nil {
		return strings.TrimSpace(f.Text)
	}
	return ""
}

func (n *xnode) pass(t *testing.T, name string) *xnode {
	t.Helper()
	for _, s := range n.all("settings") {
		if s.attr("pass") == name {
			return s
		}
	}
	t.Fatalf("no settings pass %q", name)
	return nil
}

func (n *xnode) component(t *testing.T, name string) *xnode {
	t.Helper()
	for _, c := range n.all("component") {
		if c.attr("name") == name {
			return c
		}
	}
	t.Fatalf("no component %q", name)
	return nil
}

func assertOrders(t *testing.T, items []*xnode) {
	t.Helper()
	for i, it := range items {
		assert.Equal(t, strconv.Itoa(i+1), it.text("Order"), "Order of item %d", i)
	}
}

// assertComponents checks every component of an answer file carries the
// attributes Setup matches components by, and returns the passes in order.
func assertComponents(t *testing.T, root *xnode) []string {
	t.Helper()
	assert.Equal(t, "unattend", root.XMLName.Local)
	assert.Equal(t, unattendNS, root.XMLName.Space)
	var passes []string
	for _, s := range root.all("settings") {
		passes = append(passes, s.attr("pass"))
		for _, c := range s.all("component") {
			assert.Equal(t, "amd64", c.attr("processorArchitecture"), c.attr("name"))
			assert.Equal(t, "31bf3856ad364e35", c.attr("publicKeyToken"), c.attr("name"))
			assert.Equal(t, "neutral", c.attr("language"), c.attr("name"))
			assert.Equal(t, "nonSxS", c.attr("versionScope"), c.attr("name"))
			assert.NotEmpty(t, c.attr("name"))
		}
	}
	return passes
}

func decodePassword(t *testing.T, v, suffix string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(v)
	require.NoError(t, err)
	require.Zero(t, len(raw)%2)
	u := make([]uint16, len(raw)/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	s := string(utf16.Decode(u))
	require.True(t, strings.HasSuffix(s, suffix), "encoded password lacks suffix %q", suffix)
	return strings.TrimSuffix(s, suffix)
}

func passwordValue(t *testing.T, n *xnode, suffix string) string {
	t.Helper()
	require.NotNil(t, n)
	v := n.text("Value")
	switch n.text("PlainText") {
	case "true":
		return v
	case "false":
		return decodePassword(t, v, suffix)
	}
	t.Fatalf("PlainText must be true or false, got %q", n.text("PlainText"))
	return ""
}

func TestRenderWindowsStructure(t *testing.T) {
	cases := windowsMatrix()
	custom := baseWindows()
	custom.Username = "packer"
	custom.Password = "ünïcødé ‘quoted’ & <tags> 🔑"
	custom.FirstLogonCommands = []string{"cmd /c one", "cmd /c two"}
	cases["custom-user"] = custom
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := RenderWindows(w)
			require.NoError(t, err)
			root := parseXML(t, out)
			assert.Equal(t, []string{passWindowsPE, passOfflineServicing, passSpecialize, passOOBESystem}, assertComponents(t, root))

			wd := w.withDefaults()
			pe := root.pass(t, passWindowsPE)
			setup := pe.component(t, "Microsoft-Windows-Setup")
			creates := setup.all("DiskConfiguration/Disk/CreatePartitions/CreatePartition")
			modifies := setup.all("DiskConfiguration/Disk/ModifyPartitions/ModifyPartition")
			assertOrders(t, creates)
			assertOrders(t, modifies)
			var types []string
			for _, c := range creates {
				types = append(types, c.text("Type"))
			}
			installTo, _ := strconv.Atoi(setup.text("ImageInstall/OSImage/InstallTo/PartitionID"))
			require.True(t, installTo >= 1 && installTo <= len(modifies), "InstallTo partition %d does not exist", installTo)
			target := modifies[installTo-1]
			assert.Equal(t, "C", target.text("Letter"))
			assert.Equal(t, "NTFS", target.text("Format"))
			assert.Equal(t, "true", creates[installTo-1].text("Extend"), "Windows goes on the partition that fills the disk")
			if wd.Firmware == FirmwareUEFI {
				assert.Equal(t, []string{"EFI", "MSR", "Primary"}, types)
				assert.Equal(t, "FAT32", modifies[0].text("Format"))
				assert.Empty(t, setup.find("DiskConfiguration/Disk/ModifyPartitions/ModifyPartition/Active"), "UEFI has no active partition")
			} else {
				assert.Equal(t, []string{"Primary", "Primary"}, types)
				assert.Equal(t, "true", modifies[0].text("Active"))
				assert.Equal(t, "350", creates[0].text("Size"))
			}
			assert.Equal(t, setup.text("DiskConfiguration/Disk/DiskID"), setup.text("ImageInstall/OSImage/InstallTo/DiskID"))

			key, value := wd.imageSelector()
			assert.Equal(t, key, setup.text("ImageInstall/OSImage/InstallFrom/MetaData/Key"))
			assert.Equal(t, value, setup.text("ImageInstall/OSImage/InstallFrom/MetaData/Value"))
			if wd.ProductKey == ProductKeyKMS {
				assert.Equal(t, windowsReleases[wd.Version].KMSClientKeys[wd.Edition], setup.text("UserData/ProductKey/Key"))
			} else if wd.ProductKey == "" {
				assert.Nil(t, setup.find("UserData/ProductKey/Key"), "evaluation media take no key")
			}

			paths := pe.component(t, "Microsoft-Windows-PnpCustomizationsWinPE").all("DriverPaths/PathAndCredentials")
			assert.Len(t, paths, len(wd.VirtioDrivers)*len(wd.VirtioDriveLetters))
			for i, p := range paths {
				assert.Equal(t, strconv.Itoa(i+1), p.attr("keyValue"))
				assert.Contains(t, p.text("Path"), `\`+windowsReleases[wd.Version].VirtioDir+`\amd64`)
			}

			oobe := root.pass(t, passOOBESystem).component(t, "Microsoft-Windows-Shell-Setup")
			assert.Equal(t, wd.Password, passwordValue(t, oobe.find("UserAccounts/AdministratorPassword"), "AdministratorPassword"))
			assert.Equal(t, wd.Password, passwordValue(t, oobe.find("AutoLogon/Password"), "Password"))
			assert.Equal(t, wd.Username, oobe.text("AutoLogon/Username"))
			if !wd.isBuiltinAdmin() {
				acct := oobe.find("UserAccounts/LocalAccounts/LocalAccount")
				require.NotNil(t, acct)
				assert.Equal(t, wd.Username, acct.text("Name"))
				assert.Equal(t, "Administrators", acct.text("Group"))
				assert.Equal(t, wd.Password, passwordValue(t, acct.find("Password"), "Password"))
			}
			cmds := oobe.all("FirstLogonCommands/SynchronousCommand")
			require.Len(t, cmds, len(wd.FirstLogonCommands)+2)
			assertOrders(t, cmds)
			assert.Equal(t, AutoLogonCountResetCommand, cmds[0].text("CommandLine"), "the AutoLogonCount reset runs first")
			assert.Equal(t, "1", oobe.text("AutoLogon/LogonCount"))
			for i, c := range wd.FirstLogonCommands {
				assert.Equal(t, c, cmds[i+1].text("CommandLine"))
			}
			assert.Equal(t, bootstrapCommandLine(), cmds[len(cmds)-1].text("CommandLine"), "the bootstrap runs last")
			assert.Equal(t, "false", root.pass(t, passOfflineServicing).component(t, "Microsoft-Windows-LUA-Settings").text("EnableLUA"))
			spec := root.pass(t, passSpecialize)
			assert.Equal(t, wd.ComputerName, spec.component(t, "Microsoft-Windows-Shell-Setup").text("ComputerName"))
			assert.Equal(t, "true", spec.component(t, "Microsoft-Windows-ServerManager-SvrMgrNc").text("DoNotOpenServerManagerAtLogon"))
			assert.Equal(t, "true", spec.component(t, "Microsoft-Windows-Security-SPP-UX").text("SkipAutoActivation"))
		})
	}
}

// Windows adds 1 to LogonCount (Microsoft Learn, AutoLogon LogonCount
// "known issue"): one automatic logon is LogonCount 1 and the registry's
// AutoLogonCount set to 0 by the first first-logon command; N logons are
// LogonCount N-1 without the reset.
func TestRenderWindowsResetsAutoLogonCount(t *testing.T) {
	for count, want := range map[int]struct {
		logonCount string
		reset      bool
	}{0: {"1", true}, 1: {"1", true}, 2: {"1", false}, 3: {"2", false}} {
		w := baseWindows()
		w.AutoLogonCount = count
		w.FirstLogonCommands = []string{"cmd /c one"}
		out, err := RenderWindows(w)
		require.NoError(t, err)
		oobe := parseXML(t, out).pass(t, passOOBESystem).component(t, "Microsoft-Windows-Shell-Setup")
		assert.Equal(t, want.logonCount, oobe.text("AutoLogon/LogonCount"), "autologon_count %d", count)
		cmds := oobe.all("FirstLogonCommands/SynchronousCommand")
		assertOrders(t, cmds)
		if want.reset {
			require.Len(t, cmds, 3)
			assert.Equal(t, AutoLogonCountResetCommand, cmds[0].text("CommandLine"), "autologon_count %d", count)
		} else {
			require.Len(t, cmds, 2)
			assert.NotContains(t, string(out), "AutoLogonCount", "autologon_count %d", count)
		}
		assert.Equal(t, "cmd /c one", cmds[len(cmds)-2].text("CommandLine"))
	}
	assert.Equal(t, `reg.exe ADD "HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Winlogon" /v AutoLogonCount /t REG_DWORD /d 0 /f`, AutoLogonCountResetCommand)
}

// The first-boot answer file gets the install answer file's structural
// checks: well-formed, every component with the attributes Setup matches
// by, the passes it needs, only the clone's password and never the build's.
func TestRenderWindowsFirstBootStructure(t *testing.T) {
	build := baseWindows().Password
	for name, f := range map[string]WindowsFirstBoot{
		"default": {Password: "Clone&Pass<1>"},
		"custom": {Password: "ünïcødé ‘clone’ & <tags> 🔑", PasswordEncoding: PasswordPlainText, ComputerName: "node-7",
			Commands: []string{`sc.exe config kubenode-joiner start= auto`}},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, f.Validate())
			out, err := RenderWindowsFirstBoot(f)
			require.NoError(t, err)
			root := parseXML(t, out)
			assert.Equal(t, []string{passSpecialize, passOOBESystem}, assertComponents(t, root))
			spec := root.pass(t, passSpecialize)
			shell := spec.component(t, "Microsoft-Windows-Shell-Setup")
			assert.Equal(t, f.withDefaults().ComputerName, shell.text("ComputerName"))
			assert.Equal(t, "true", spec.component(t, "Microsoft-Windows-ServerManager-SvrMgrNc").text("DoNotOpenServerManagerAtLogon"))
			assertOrders(t, spec.component(t, "Microsoft-Windows-Deployment").all("RunSynchronous/RunSynchronousCommand"))

			oobe := root.pass(t, passOOBESystem).component(t, "Microsoft-Windows-Shell-Setup")
			assert.Equal(t, "true", oobe.text("OOBE/SkipMachineOOBE"))
			assert.Equal(t, f.Password, passwordValue(t, oobe.find("UserAccounts/AdministratorPassword"), "AdministratorPassword"))
			assert.Nil(t, oobe.find("UserAccounts/LocalAccounts"), "no account but Administrator")
			assert.Nil(t, oobe.find("AutoLogon"), "a clone must not log on automatically")
			assert.Len(t, root.all("settings/component/UserAccounts/AdministratorPassword"), 1, "the only password in the file")
			var escaped bytes.Buffer
			require.NoError(t, xml.EscapeText(&escaped, []byte(build)))
			for _, form := range []string{build, escaped.String(), EncodeUnattendPassword(build, "AdministratorPassword"), EncodeUnattendPassword(build, "Password")} {
				assert.NotContains(t, string(out), form, "the build password is not in the first-boot file")
			}
		})
	}
}

// kubenode-libvirt gives Windows a UTC RTC; without RealTimeIsUniversal
// Windows reads it as local time and a guest outside UTC runs hours off.
func TestRenderWindowsRTCIsUniversal(t *testing.T) {
	for name, w := range windowsMatrix() {
		t.Run(name, func(t *testing.T) {
			out, err := RenderWindows(w)
			require.NoError(t, err)
			deploy := parseXML(t, out).pass(t, passSpecialize).component(t, "Microsoft-Windows-Deployment")
			cmds := deploy.all("RunSynchronous/RunSynchronousCommand")
			require.Len(t, cmds, 1)
			assertOrders(t, cmds)
			path := cmds[0].text("Path")
			assert.Equal(t, RTCIsUniversalCommand, path)
			for _, want := range []string{
				`reg.exe ADD "HKLM\SYSTEM\CurrentControlSet\Control\TimeZoneInformation"`,
				"/v RealTimeIsUniversal", "/t REG_DWORD", "/d 1", "/f",
			} {
				assert.Contains(t, path, want)
			}
			assert.LessOrEqual(t, len(path), maxRunSynchronousLen)
		})
	}
}

func TestEncodeUnattendPasswordKnownValue(t *testing.T) {
	// Windows SIM encodes "Passw0rd!" for the administrator as this string
	// (UTF-16LE of "Passw0rd!AdministratorPassword", base64).
	assert.Equal(t, "UABhAHMAcwB3ADAAcgBkACEAQQBkAG0AaQBuAGkAcwB0AHIAYQB0AG8AcgBQAGEAcwBzAHcAbwByAGQA",
		EncodeUnattendPassword("Passw0rd!", "AdministratorPassword"))
}

func TestWindowsValidateReportsEveryProblem(t *testing.T) {
	w := Windows{
		Version: "2016", Edition: "enterprise", Experience: "gui", Firmware: "coreboot",
		ImageName: "x", ImageIndex: 2, ComputerName: "this-name-is-too-long", Username: "bad/user",
		PasswordEncoding: "rot13", ProductKey: "12345", Communicator: "telnet",
		VirtioDrivers: []string{"viostor", "floppy"}, VirtioDriveLetters: []string{"A"},
		UILanguage: "English", TimeZone: "Mars/Olympus;", FirstLogonCommands: []string{"", "a\nb"},
		SSHAuthorizedKeys: []string{"not a key"},
	}
	err := w.Validate()
	require.Error(t, err)
	require.True(t, IsValidation(err))
	msg := err.Error()
	for _, key := range []string{
		"version:", "edition:", "experience:", "firmware:", "image_name: set image_name or image_index",
		"computer_name:", "username:", "password: is required", "password_encoding:", "product_key:",
		"communicator:", "virtio_drivers[1]:", "virtio_drive_letters[0]:", "ui_language:", "timezone:",
		"first_logon_commands[0]: is empty", "first_logon_commands[1]: contains a control character",
		"ssh_authorized_keys[0]:",
	} {
		assert.Contains(t, msg, key)
	}
	assert.Contains(t, msg, `use one of "2019", "2022", "2025"`)

	ssh := baseWindows()
	ssh.Communicator = CommunicatorSSH
	assert.ErrorContains(t, ssh.Validate(), "ssh_authorized_keys: is required when communicator is \"ssh\"")

	_, err = RenderWindows(w)
	assert.True(t, IsValidation(err), "RenderWindows validates")
	assert.NoError(t, baseWindows().Validate())
}

func TestWindowsFirstBootValidate(t *testing.T) {
	err := WindowsFirstBoot{ComputerName: "12345", Commands: []string{strings.Repeat("x", 300)}}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "computer_name:")
	assert.Contains(t, err.Error(), "password: is required")
	assert.Contains(t, err.Error(), "commands[0]: is 300 characters; Windows runs at most 259")
}

func TestEvaluationImageIndex(t *testing.T) {
	assert.Equal(t, 1, EvaluationImageIndex(EditionStandard, ExperienceCore))
	assert.Equal(t, 2, EvaluationImageIndex(EditionStandard, ExperienceDesktop))
	assert.Equal(t, 3, EvaluationImageIndex(EditionDatacenter, ExperienceCore))
	assert.Equal(t, 4, EvaluationImageIndex(EditionDatacenter, ExperienceDesktop))
}

// WinRM starts delayed-auto: plain Automatic is not reliably up after the
// Containers feature's restart.
func TestWinRMStartsDelayedAuto(t *testing.T) {
	for _, name := range []string{"bootstrap-winrm.ps1", "bootstrap-winrm-https.ps1"} {
		out, err := RenderWindowsBootstrap(bootstrapCases()[name])
		require.NoError(t, err)
		s := string(out)
		assert.Contains(t, s, "& sc.exe config WinRM start= delayed-auto\r\n", name)
		assert.NotContains(t, s, "Set-Service -Name 'WinRM' -StartupType Automatic", name)
		assert.Less(t, strings.Index(s, "start= delayed-auto"), strings.Index(s, "Restart-Service -Name 'WinRM'"), name)
	}
}

// No winrm quickconfig: it fails while any network is still Public, after
// Enable-PSRemoting has done its work. The HTTP listener it would create is
// made sure of by other commands.
func TestWinRMBootstrapHasNoQuickconfig(t *testing.T) {
	for _, name := range []string{"bootstrap-winrm.ps1", "bootstrap-winrm-https.ps1"} {
		out, err := RenderWindowsBootstrap(bootstrapCases()[name])
		require.NoError(t, err)
		s := string(out)
		assert.NotContains(t, s, "winrm.cmd quickconfig", name)
		assert.Contains(t, s, "Enable-PSRemoting -Force -SkipNetworkProfileCheck", name)
		assert.Contains(t, s, `New-Item -Path 'WSMan:\localhost\Listener' -Transport HTTP`, name)
	}
}

// The flip to Private is a bounded loop over Get-NetConnectionProfile, every
// 5 s for up to 5 minutes, waiting for Network Location Awareness; it comes
// before Enable-PSRemoting.
func TestWinRMBootstrapRetriesNetworkProfile(t *testing.T) {
	out, err := RenderWindowsBootstrap(bootstrapCases()["bootstrap-winrm.ps1"])
	require.NoError(t, err)
	s := string(out)
	loop := strings.Index(s, "while ($true) {")
	require.NotEqual(t, -1, loop)
	body := s[loop:strings.Index(s, "Enable-PSRemoting")]
	assert.Contains(t, body, "Get-NetConnectionProfile")
	assert.Contains(t, body, "Set-NetConnectionProfile -NetworkCategory Private")
	assert.Contains(t, body, "Identifying*", "a profile being identified is not set yet")
	assert.Contains(t, body, "Start-Sleep -Seconds 5")
	assert.Contains(t, s, "$deadline = (Get-Date).AddMinutes(5)")
	assert.Contains(t, body, "break", "the loop is bounded")
}

// Each stage and any error go to COM1; the port write is best effort.
func TestBootstrapWritesProgressToCOM1(t *testing.T) {
	for name, w := range bootstrapCases() {
		out, err := RenderWindowsBootstrap(w)
		require.NoError(t, err)
		s := string(out)
		fn := strings.Index(s, "function Write-KubenodeSerial")
		require.NotEqual(t, -1, fn, name)
		assert.Contains(t, s, "System.IO.Ports.SerialPort 'COM1', 115200", name)
		assert.Contains(t, s[fn:strings.Index(s, "trap {")], "} catch {", "%s: a missing port never stops the script", name)
		trap := strings.Index(s, "trap {")
		assert.Less(t, trap, strings.Index(s, "Start-Transcript"), "%s: the trap is set before the first command", name)
		assert.Contains(t, s[trap:], "Write-KubenodeSerial ('FAILED: ' + $_.Exception.Message", name)
		assert.Contains(t, s[trap:], "exit 1", name)
		assert.Contains(t, s, "Write-KubenodeSerial 'started (", name)
		last := strings.LastIndex(s, "Write-KubenodeSerial 'done: ")
		assert.Greater(t, last, strings.Index(s, "Remove-NetFirewallRule -Name 'kubenode-build-gate'"), "%s: done is written once the ports are open", name)
		assert.GreaterOrEqual(t, strings.Count(s, "Write-KubenodeSerial '"), 3, name)
	}
}

// A seed disc the first logon cannot find is written to COM1 too, and the
// command line stays within Setup's limit.
func TestBootstrapLocatorWritesAMissingScriptToCOM1(t *testing.T) {
	assert.Contains(t, bootstrapLocator, "System.IO.Ports.SerialPort 'COM1', 115200")
	assert.Contains(t, bootstrapLocator, "'"+serialPrefix+" FAILED: ' + $m")
	assert.Contains(t, bootstrapLocator, "} catch { }; throw $m }", "a missing port never hides the error")
	assert.LessOrEqual(t, len(bootstrapCommandLine()), maxFirstLogonCommandLen)
}
