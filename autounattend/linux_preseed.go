// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"fmt"
	"strings"
)

// A d-i preseed file is read by debian-installer's debconf-set-selections:
// one "owner question type value" per line, the value being the rest of the
// line with leading blanks removed. A line ending in '\' continues on the
// next one, and '#' starts a comment only at the start of a line. So a
// value needs no quoting as long as it has no newline (Validate refuses
// control characters) and does not end in '\' (no value here can: the
// user's text only appears inside single quotes, which end the line).

// preseedInTarget runs a shell command line inside the installed system.
// d-i runs preseed/late_command with sh -c; in-target chroots into /target
// and passes its arguments on unchanged.
func preseedInTarget(cmd string) string {
	return "in-target sh -c " + posixShellQuote(cmd)
}

// preseedKeysScript writes the authorized keys, given as its positional
// parameters, so no key text is spliced into the script itself. It holds
// no backslash, like everything kubenode adds to the preseed line (see
// posixShellQuote), and it never echoes a key: the target's sh is dash,
// whose echo expands backslashes.
func preseedKeysScript(user string) string {
	home := "/home/" + user
	return "umask 077 && mkdir -p " + home + "/.ssh && for k in \"$@\"; do printf %s \"$k\"; echo; done > " + home +
		"/.ssh/authorized_keys && chown -R " + user + ": " + home + "/.ssh"
}

// preseedLateCommand joins every late command with " && ": d-i shows a
// blocking error when the whole line fails, so a failing command stops the
// install instead of leaving an image that only looks finished (as
// autoinstall and kickstart's %post --erroronfail do).
func preseedLateCommand(l Linux) string {
	cmds := []string{preseedInTarget(l.sudoersScript())}
	if len(l.SSHAuthorizedKeys) > 0 {
		words := []string{preseedInTarget(preseedKeysScript(l.Username)), "sh"}
		for _, k := range l.SSHAuthorizedKeys {
			words = append(words, posixShellQuote(k))
		}
		cmds = append(cmds, strings.Join(words, " "))
	}
	for _, c := range l.LateCommands {
		cmds = append(cmds, preseedInTarget(c))
	}
	return strings.Join(cmds, " && ")
}

func renderPreseed(l Linux, hash string) []byte {
	var b strings.Builder
	line := func(owner, question, typ, value string) {
		// No trailing blank for an empty value: d-i reads "string" alone
		// as an empty string.
		fmt.Fprintf(&b, "%s %s %s", owner, question, typ)
		if value != "" {
			b.WriteString(" " + value)
		}
		b.WriteString("\n")
	}
	di := func(question, typ, value string) { line("d-i", question, typ, value) }
	section := func(title string) { fmt.Fprintf(&b, "\n### %s\n", title) }

	b.WriteString("# Debian installer preseed written by kubenode. Generated: do not edit.\n")

	section("Localization")
	di("debian-installer/locale", "string", l.Locale)
	di("keyboard-configuration/xkb-keymap", "select", l.Keyboard)

	section("Network")
	domain := strings.TrimPrefix(strings.TrimPrefix(l.Hostname, l.shortHostname()), ".")
	di("netcfg/choose_interface", "select", "auto")
	di("netcfg/get_hostname", "string", l.shortHostname())
	di("netcfg/get_domain", "string", domain)
	// netcfg/hostname wins over a name DHCP hands out.
	di("netcfg/hostname", "string", l.shortHostname())

	section("Mirror: Debian's default, written out so it is not asked")
	di("mirror/country", "string", "manual")
	di("mirror/http/hostname", "string", "deb.debian.org")
	di("mirror/http/directory", "string", "/debian")
	di("mirror/http/proxy", "string", l.HTTPProxy)

	section("Account")
	di("passwd/root-login", "boolean", "false")
	di("passwd/make-user", "boolean", "true")
	di("passwd/user-fullname", "string", l.Username)
	di("passwd/username", "string", l.Username)
	pw := hash
	if pw == "" {
		pw = lockedPassword
	}
	di("passwd/user-password-crypted", "password", pw)

	section("Clock")
	di("clock-setup/utc", "boolean", "true")
	di("time/zone", "string", l.Timezone)
	di("clock-setup/ntp", "boolean", "true")

	section("Partitioning: the whole disk, no questions")
	if l.Disk != "" {
		di("partman-auto/disk", "string", l.Disk)
	}
	method := "regular"
	if l.StorageLayout == StorageLVM {
		method = "lvm"
	}
	di("partman-auto/method", "string", method)
	di("partman-auto-lvm/guided_size", "string", "max")
	di("partman-lvm/device_remove_lvm", "boolean", "true")
	di("partman-md/device_remove_md", "boolean", "true")
	di("partman-lvm/confirm", "boolean", "true")
	di("partman-lvm/confirm_nooverwrite", "boolean", "true")
	di("partman-auto/choose_recipe", "select", "atomic")
	di("partman-efi/non_efi_system", "boolean", "true")
	di("partman-partitioning/confirm_write_new_label", "boolean", "true")
	di("partman/choose_partition", "select", "finish")
	di("partman/confirm", "boolean", "true")
	di("partman/confirm_nooverwrite", "boolean", "true")

	section("Packages")
	di("apt-setup/cdrom/set-first", "boolean", "false")
	line("tasksel", "tasksel/first", "multiselect", "standard")
	di("pkgsel/include", "string", strings.Join(l.packages(), " "))
	line("popularity-contest", "popularity-contest/participate", "boolean", "false")

	section("Boot loader")
	bootdev := "default"
	if l.Disk != "" {
		bootdev = l.Disk
	}
	di("grub-installer/only_debian", "boolean", "true")
	di("grub-installer/with_other_os", "boolean", "true")
	di("grub-installer/bootdev", "string", bootdev)

	section("Finish")
	di("preseed/late_command", "string", preseedLateCommand(l))
	di("finish-install/reboot_in_progress", "note", "")
	return []byte(b.String())
}
