// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"fmt"
	"regexp"
	"strings"
)

// Anaconda splits each kickstart command line with Python's shlex.split
// (POSIX mode, '#' starting a comment anywhere outside quotes). ksQuote
// writes a value as one shlex word.

// ksBareRE matches words shlex returns unchanged: no blank, quote,
// backslash or '#'.
var ksBareRE = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./$-]+$`)

// ksQuote returns s as a single shlex word: bare when it can be, else in
// double quotes, where shlex treats a backslash as an escape only before
// '"' and '\'.
func ksQuote(s string) string {
	if ksBareRE.MatchString(s) {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// ksDrive is the drive name kickstart options take ("vda" for /dev/vda).
func ksDrive(disk string) string { return strings.TrimPrefix(disk, "/dev/") }

func renderKickstart(l Linux, hash string) []byte {
	var b strings.Builder
	cmd := func(words ...string) { b.WriteString(strings.Join(words, " ") + "\n") }
	opt := func(name, value string) string { return "--" + name + "=" + ksQuote(value) }

	b.WriteString("# Kickstart written by kubenode. Generated: do not edit.\n")
	cmd("text")
	cmd("lang", ksQuote(l.Locale))
	cmd("keyboard", opt("xlayouts", l.Keyboard))
	cmd("timezone", ksQuote(l.Timezone), "--utc")
	cmd("network", "--bootproto=dhcp", "--device=link", "--activate", "--onboot=on", opt("hostname", l.Hostname))
	cmd("rootpw", "--lock")
	if hash != "" {
		cmd("user", opt("name", l.Username), "--groups=wheel", "--iscrypted", opt("password", hash))
	} else {
		cmd("user", opt("name", l.Username), "--groups=wheel", "--lock")
	}
	// One sshkey line per user: pykickstart warns on a second one (fatal
	// under inst.ksstrict); the other keys are appended in %post.
	if len(l.SSHAuthorizedKeys) > 0 {
		cmd("sshkey", opt("username", l.Username), ksQuote(l.SSHAuthorizedKeys[0]))
	}
	b.WriteString("\n# Storage: the whole disk\n")
	cmd("zerombr")
	if l.Disk != "" {
		// ignoredisk keeps autopart off every other disk.
		cmd("ignoredisk", opt("only-use", ksDrive(l.Disk)))
		cmd("clearpart", "--all", "--initlabel", opt("drives", ksDrive(l.Disk)))
	} else {
		cmd("clearpart", "--all", "--initlabel")
	}
	autopart := "plain"
	if l.StorageLayout == StorageLVM {
		autopart = "lvm"
	}
	cmd("autopart", "--type="+autopart)
	if l.Disk != "" {
		cmd("bootloader", "--location=mbr", opt("boot-drive", ksDrive(l.Disk)))
	} else {
		cmd("bootloader", "--location=mbr")
	}
	b.WriteString("\n")
	cmd("firstboot", "--disable")
	cmd("services", "--enabled=sshd")
	cmd("reboot")

	b.WriteString("\n%packages\n@core\n")
	for _, p := range l.packages() {
		b.WriteString(p + "\n")
	}
	b.WriteString("%end\n")

	// One %post per command, each failing the install when it fails, as
	// autoinstall's late-commands do. %post runs with /bin/sh inside the
	// installed system; its lines are not split by shlex, so commands go
	// in as written.
	post := func(body string) {
		fmt.Fprintf(&b, "\n%%post --erroronfail\n%s\n%%end\n", body)
	}
	post(l.sudoersScript())
	if len(l.SSHAuthorizedKeys) > 1 {
		post(ksMoreKeysScript(l.Username, l.SSHAuthorizedKeys[1:]))
	}
	for _, c := range l.LateCommands {
		post(c)
	}
	return []byte(b.String())
}

// ksMoreKeysScript appends keys to the authorized_keys file sshkey made,
// which keeps the SELinux context Anaconda gave it.
func ksMoreKeysScript(user string, keys []string) string {
	words := []string{"printf", "'%s\\n'"}
	for _, k := range keys {
		words = append(words, posixShellQuote(k))
	}
	return strings.Join(words, " ") + " >> /home/" + user + "/.ssh/authorized_keys"
}
