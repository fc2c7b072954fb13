// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
)

const (
	linuxTestKeyEd25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC9ANFJbXPP/qpgo9iPwjYA5qJeYSSjIL4ktq/tMzo2n ops@example"
	linuxTestKeyECDSA   = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBHPT73ZQdFHRyu+x47zpJ2LsmlzFZz/fIlf7PrZ244TslT2kWh3tL4vUDhV7hPlKJER76ayu+LhnSt67EW4J8bE="
	linuxTestSalt       = "kubenodeGolden16"
	linuxTestPassword   = "correct horse battery staple"
)

// linuxHostileKey has a comment with every character that means something
// to YAML, sh, shlex or d-i.
var linuxHostileKey = linuxTestKeyECDSA + ` ops "laptop" \ #2 $HOME 'q' : - {x} ünï`

// linuxHostileCommands mean something to YAML 1.1, YAML 1.2, sh, shlex or
// d-i when written carelessly. None is run by the tests.
var linuxHostileCommands = []string{
	`echo "it's $HOME" > /tmp/x; rm -rf '/'`,
	"yes", "on", "0755", "12:30", "1_000", "0x1F", ".inf", "~", "null", "- item", "{a: b}", "[a]",
	"*alias", "&anchor x", "!tag x", "@at", "`id`", "key: value # comment", "'", `"`, `\`,
	`ends with a backslash \`, "ünïcode ✓ 密码", " leading and trailing space ", "a ; b && c || d | e > f < g",
	"$(reboot) ${HOME} $((1+1))", "% percent",
}

// linuxGoldenConfigs are the configs of the golden files, by directory.
func linuxGoldenConfigs() map[string]Linux {
	return map[string]Linux{
		"ubuntu-autoinstall": {
			Flavor:            FlavorUbuntuAutoinstall,
			Hostname:          "node-1",
			Username:          "kubenode",
			Password:          linuxTestPassword,
			PasswordSalt:      linuxTestSalt,
			SSHAuthorizedKeys: []string{linuxTestKeyEd25519},
			Packages:          []string{"qemu-guest-agent", "containerd"},
			Disk:              "/dev/vda",
			StorageLayout:     StorageLVM,
			LateCommands:      []string{"systemctl enable qemu-guest-agent", `echo "it's $HOME" > /var/tmp/kubenode-note`},
		},
		"cloud-init": {
			Flavor:            FlavorCloudInit,
			Hostname:          "node-1.example.com",
			Username:          "kubenode",
			Password:          linuxTestPassword,
			PasswordSalt:      linuxTestSalt,
			SSHAuthorizedKeys: []string{linuxTestKeyEd25519, linuxTestKeyECDSA + ` ops "laptop" #2`},
			Packages:          []string{"containerd", "openssh-server"},
			Timezone:          "Europe/Berlin",
			LateCommands:      []string{"systemctl enable --now containerd", `echo "it's $HOME" > /var/tmp/kubenode-note`},
		},
		"debian-preseed": {
			Flavor:            FlavorPreseed,
			Hostname:          "node-1.example.com",
			Username:          "kubenode",
			Password:          linuxTestPassword,
			PasswordSalt:      linuxTestSalt,
			SSHAuthorizedKeys: []string{linuxTestKeyEd25519, linuxTestKeyECDSA + ` it's "mine"`},
			Packages:          []string{"qemu-guest-agent", "containerd"},
			Disk:              "/dev/vda",
			LateCommands:      []string{"systemctl enable qemu-guest-agent", `echo "it's $HOME" > /var/tmp/kubenode-note`},
		},
		"rocky-kickstart": {
			Flavor:            FlavorKickstart,
			Hostname:          "node-1.example.com",
			Username:          "kubenode",
			Password:          linuxTestPassword,
			PasswordSalt:      linuxTestSalt,
			SSHAuthorizedKeys: []string{linuxTestKeyEd25519, linuxTestKeyECDSA + ` ops "laptop" \ #2`},
			Packages:          []string{"qemu-guest-agent", "containerd.io"},
			Disk:              "/dev/vda",
			StorageLayout:     StorageLVM,
			LateCommands:      []string{"systemctl enable qemu-guest-agent", `echo "it's $HOME" > /var/tmp/kubenode-note`},
		},
	}
}

func TestRenderLinuxGolden(t *testing.T) {
	wantNames := map[string][]string{
		FlavorUbuntuAutoinstall: {LinuxUserDataFile, LinuxMetaDataFile},
		FlavorCloudInit:         {LinuxUserDataFile, LinuxMetaDataFile},
		FlavorPreseed:           {LinuxPreseedFile},
		FlavorKickstart:         {LinuxKickstartFile},
	}
	for dir, l := range linuxGoldenConfigs() {
		t.Run(dir, func(t *testing.T) {
			files, err := RenderLinux(l)
			require.NoError(t, err)
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
				golden.Assert(t, "linux/"+dir+"/"+f.Name, f.Data)
			}
			assert.Equal(t, wantNames[l.Flavor], names)
		})
	}
}

// TestRenderLinuxIsDeterministic: with a fixed salt two renders are equal;
// without one only the password hash differs.
func TestRenderLinuxIsDeterministic(t *testing.T) {
	for dir, l := range linuxGoldenConfigs() {
		a, err := RenderLinux(l)
		require.NoError(t, err)
		b, err := RenderLinux(l)
		require.NoError(t, err)
		assert.Equal(t, a, b, dir)

		l.PasswordSalt = ""
		c, err := RenderLinux(l)
		require.NoError(t, err)
		d, err := RenderLinux(l)
		require.NoError(t, err)
		assert.NotEqual(t, c[0].Data, d[0].Data, dir)
		mask := func(b []byte) string { return sha512HashAnywhereRE.ReplaceAllString(string(b), "HASH") }
		assert.Equal(t, mask(c[0].Data), mask(d[0].Data), dir)
	}
}

var sha512HashAnywhereRE = regexp.MustCompile(`\$6\$[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{86}`)

// linuxYAML parses user-data or meta-data with a YAML parser.
func linuxYAML(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(data, &m), string(data))
	return m
}

func linuxFile(t *testing.T, files []File, name string) []byte {
	t.Helper()
	for _, f := range files {
		if f.Name == name {
			return f.Data
		}
	}
	t.Fatalf("no %s among the rendered files", name)
	return nil
}

func anyStrings(t *testing.T, v any) []string {
	t.Helper()
	list, ok := v.([]any)
	require.True(t, ok, "%#v is not a list", v)
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		require.True(t, ok, "item %d (%#v) is not a string", i, e)
		out[i] = s
	}
	return out
}

// TestLinuxYAMLRoundTrip renders hostile values and parses them back: every
// key, package and command must come back as the same string.
func TestLinuxYAMLRoundTrip(t *testing.T) {
	l := Linux{
		Hostname:          "node-1.example.com",
		Username:          "_kube-node_1",
		Password:          `p'a"s$s: #w\o🔑rd`,
		PasswordSalt:      "aZ./09",
		SSHAuthorizedKeys: []string{linuxTestKeyEd25519, linuxHostileKey},
		Packages:          []string{"g++", "libc6:amd64", "1password", "yes", "no"},
		LateCommands:      linuxHostileCommands,
		Locale:            "C.UTF-8",
		Keyboard:          "de",
		Timezone:          "America/Argentina/Buenos_Aires",
		InstanceID:        "0755",
	}
	wantHash, err := HashPassword(l.Password, l.PasswordSalt)
	require.NoError(t, err)
	wantPackages := append([]string{"openssh-server"}, l.Packages...)
	// cloud-init: the image answers SSH already; only what was asked for.
	wantCloudInitPackages := l.Packages

	t.Run("cloud-init", func(t *testing.T) {
		l := l
		l.Flavor = FlavorCloudInit
		files, err := RenderLinux(l)
		require.NoError(t, err)
		data := linuxFile(t, files, LinuxUserDataFile)
		require.True(t, bytes.HasPrefix(data, []byte("#cloud-config\n")))
		m := linuxYAML(t, data)
		assert.Equal(t, "node-1", m["hostname"])
		assert.Equal(t, "node-1.example.com", m["fqdn"])
		assert.Equal(t, true, m["ssh_pwauth"])
		users := m["users"].([]any)
		require.Len(t, users, 1)
		u := users[0].(map[string]any)
		assert.Equal(t, "_kube-node_1", u["name"])
		assert.Equal(t, wantHash, u["passwd"])
		assert.Equal(t, false, u["lock_passwd"])
		assert.Equal(t, "ALL=(ALL) NOPASSWD:ALL", u["sudo"])
		assert.Equal(t, l.SSHAuthorizedKeys, anyStrings(t, u["ssh_authorized_keys"]))
		assert.Equal(t, wantCloudInitPackages, anyStrings(t, m["packages"]))
		assert.Equal(t, l.LateCommands, anyStrings(t, m["runcmd"]))
		assert.Equal(t, "America/Argentina/Buenos_Aires", m["timezone"])
		assert.Equal(t, "C.UTF-8", m["locale"])
		assert.Equal(t, map[string]any{"layout": "de"}, m["keyboard"])

		meta := linuxYAML(t, linuxFile(t, files, LinuxMetaDataFile))
		assert.Equal(t, map[string]any{"instance-id": "0755", "local-hostname": "node-1.example.com"}, meta)
	})

	t.Run("ubuntu-autoinstall", func(t *testing.T) {
		l := l
		l.Flavor = FlavorUbuntuAutoinstall
		files, err := RenderLinux(l)
		require.NoError(t, err)
		data := linuxFile(t, files, LinuxUserDataFile)
		require.True(t, bytes.HasPrefix(data, []byte("#cloud-config\n")))
		a := linuxYAML(t, data)["autoinstall"].(map[string]any)
		assert.Equal(t, 1, a["version"])
		assert.Equal(t, map[string]any{"hostname": "node-1.example.com", "username": "_kube-node_1", "password": wantHash}, a["identity"])
		ssh := a["ssh"].(map[string]any)
		assert.Equal(t, true, ssh["install-server"])
		assert.Equal(t, true, ssh["allow-pw"])
		assert.Equal(t, l.SSHAuthorizedKeys, anyStrings(t, ssh["authorized-keys"]))
		assert.Equal(t, map[string]any{"layout": map[string]any{"name": "direct"}}, a["storage"])
		assert.Equal(t, wantPackages, anyStrings(t, a["packages"]))
		late := anyStrings(t, a["late-commands"])
		require.Len(t, late, 1+len(l.LateCommands))
		for i, c := range l.LateCommands {
			assert.Equal(t, curtinInTarget(c), late[i+1])
		}
		assert.Equal(t, "C.UTF-8", a["locale"])
		assert.Equal(t, map[string]any{"layout": "de"}, a["keyboard"])
		assert.Equal(t, "America/Argentina/Buenos_Aires", a["timezone"])
	})
}

// TestLinuxDefaults renders the smallest config of each flavor: ssh keys
// only, so the account is locked for passwords, and every default applied.
func TestLinuxDefaults(t *testing.T) {
	base := Linux{Username: "kubenode", SSHAuthorizedKeys: []string{linuxTestKeyEd25519}}

	l := base
	l.Flavor = FlavorUbuntuAutoinstall
	files, err := RenderLinux(l)
	require.NoError(t, err)
	a := linuxYAML(t, linuxFile(t, files, LinuxUserDataFile))["autoinstall"].(map[string]any)
	assert.Equal(t, map[string]any{"hostname": "kubenode", "username": "kubenode", "password": "!"}, a["identity"])
	assert.Equal(t, false, a["ssh"].(map[string]any)["allow-pw"])
	assert.Equal(t, "en_US.UTF-8", a["locale"])
	assert.Equal(t, map[string]any{"layout": "us"}, a["keyboard"])
	assert.Equal(t, "UTC", a["timezone"])
	assert.Equal(t, []string{"openssh-server"}, anyStrings(t, a["packages"]))
	assert.Equal(t, map[string]any{"instance-id": "iid-kubenode", "local-hostname": "kubenode"},
		linuxYAML(t, linuxFile(t, files, LinuxMetaDataFile)))

	l = base
	l.Flavor = FlavorCloudInit
	files, err = RenderLinux(l)
	require.NoError(t, err)
	m := linuxYAML(t, linuxFile(t, files, LinuxUserDataFile))
	u := m["users"].([]any)[0].(map[string]any)
	assert.Equal(t, true, u["lock_passwd"])
	assert.NotContains(t, u, "passwd")
	assert.Equal(t, false, m["ssh_pwauth"])
	for _, k := range []string{"fqdn", "runcmd", "timezone", "locale", "keyboard"} {
		assert.NotContains(t, m, k, "the cloud image's own %s is kept", k)
	}
	assert.NotContains(t, m, "packages", "the image answers SSH already: no package work at first boot")

	l = base
	l.Flavor = FlavorPreseed
	files, err = RenderLinux(l)
	require.NoError(t, err)
	q := parsePreseed(t, linuxFile(t, files, LinuxPreseedFile))
	assert.Equal(t, "!", q["passwd/user-password-crypted"])
	assert.Equal(t, "regular", q["partman-auto/method"])
	assert.Equal(t, "default", q["grub-installer/bootdev"])
	assert.NotContains(t, q, "partman-auto/disk")
	assert.Equal(t, "", q["netcfg/get_domain"])

	l = base
	l.Flavor = FlavorKickstart
	files, err = RenderLinux(l)
	require.NoError(t, err)
	ks := parseKickstart(t, linuxFile(t, files, LinuxKickstartFile))
	assert.Equal(t, [][]string{{"user", "--name=kubenode", "--groups=wheel", "--lock"}}, ks.commands("user"))
	assert.Equal(t, [][]string{{"autopart", "--type=plain"}}, ks.commands("autopart"))
	assert.Equal(t, [][]string{{"clearpart", "--all", "--initlabel"}}, ks.commands("clearpart"))
	assert.Empty(t, ks.commands("ignoredisk"))
}

// parsePreseed reads a preseed file the way d-i's debconf-set-selections
// does: comment and blank lines skipped, a trailing backslash joining lines
// (none may have one), owner, question, type, then the rest of the line.
func parsePreseed(t *testing.T, data []byte) map[string]string {
	t.Helper()
	q := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		require.False(t, strings.HasSuffix(line, `\`), "line continues onto the next: %q", line)
		fields := strings.SplitN(line, " ", 4)
		require.GreaterOrEqual(t, len(fields), 3, "line %q", line)
		value := ""
		if len(fields) == 4 {
			value = strings.TrimLeft(fields[3], " \t")
		}
		_, dup := q[fields[1]]
		require.False(t, dup, "question %s is set twice", fields[1])
		q[fields[1]] = value
	}
	return q
}

func TestPreseedParsesBack(t *testing.T) {
	l := linuxGoldenConfigs()["debian-preseed"]
	files, err := RenderLinux(l)
	require.NoError(t, err)
	data := linuxFile(t, files, LinuxPreseedFile)
	// d-i reads values with echo and sed; keep every escape the user's own.
	assert.NotContains(t, string(data), `\`, "kubenode wrote a backslash into the preseed file")
	q := parsePreseed(t, data)
	hash, err := HashPassword(l.Password, l.PasswordSalt)
	require.NoError(t, err)
	for question, want := range map[string]string{
		"debian-installer/locale":           "en_US.UTF-8",
		"keyboard-configuration/xkb-keymap": "us",
		"netcfg/get_hostname":               "node-1",
		"netcfg/get_domain":                 "example.com",
		"netcfg/hostname":                   "node-1",
		"passwd/root-login":                 "false",
		"passwd/username":                   "kubenode",
		"passwd/user-password-crypted":      hash,
		"time/zone":                         "UTC",
		"partman-auto/disk":                 "/dev/vda",
		"partman-auto/method":               "regular",
		"grub-installer/bootdev":            "/dev/vda",
		"pkgsel/include":                    "openssh-server qemu-guest-agent containerd",
		"tasksel/first":                     "standard",
		"preseed/late_command":              preseedLateCommand(l),
	} {
		assert.Equal(t, want, q[question], question)
	}
	l.StorageLayout = StorageLVM
	files, err = RenderLinux(l)
	require.NoError(t, err)
	assert.Equal(t, "lvm", parsePreseed(t, files[0].Data)["partman-auto/method"])
}

// ksFile is a kickstart file split the way Anaconda reads it.
type ksFile struct {
	lines    [][]string          // command lines, split
	sections map[string][]string // "%packages", "%post --erroronfail", ... -> bodies
	order    []string            // section headers in order (repeats kept)
}

func (k ksFile) commands(name string) [][]string {
	var out [][]string
	for _, l := range k.lines {
		if l[0] == name {
			out = append(out, l)
		}
	}
	return out
}

// parseKickstart splits command lines like Python's shlex.split(line,
// comments=True) and collects section bodies up to %end.
func parseKickstart(t *testing.T, data []byte) ksFile {
	t.Helper()
	k := ksFile{sections: map[string][]string{}}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if strings.HasPrefix(line, "%") {
			var body []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "%end"; i++ {
				body = append(body, lines[i])
			}
			require.Less(t, i, len(lines), "section %s has no %%end", line)
			k.sections[line] = append(k.sections[line], strings.Join(body, "\n"))
			k.order = append(k.order, line)
			continue
		}
		k.lines = append(k.lines, shlexSplit(t, line))
	}
	return k
}

// shlexSplit is Python's shlex.split(s, comments=True) in POSIX mode for
// the characters kickstart files hold: blanks separate words, '#' outside
// quotes ends the line, single quotes are literal, a backslash escapes the
// next character outside quotes and only '"' or '\' inside double quotes.
func shlexSplit(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; {
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '#':
			i = len(rs)
		case r == '\'':
			inWord = true
			for i++; i < len(rs) && rs[i] != '\''; i++ {
				cur.WriteRune(rs[i])
			}
			require.Less(t, i, len(rs), "unclosed ' in %q", s)
		case r == '"':
			inWord = true
			for i++; i < len(rs) && rs[i] != '"'; i++ {
				if rs[i] == '\\' && i+1 < len(rs) && (rs[i+1] == '"' || rs[i+1] == '\\') {
					i++
				}
				cur.WriteRune(rs[i])
			}
			require.Less(t, i, len(rs), `unclosed " in %q`, s)
		case r == '\\':
			inWord = true
			i++
			require.Less(t, i, len(rs), "trailing backslash in %q", s)
			cur.WriteRune(rs[i])
		default:
			inWord = true
			cur.WriteRune(r)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func TestKickstartParsesBack(t *testing.T) {
	l := linuxGoldenConfigs()["rocky-kickstart"]
	l.SSHAuthorizedKeys = append(l.SSHAuthorizedKeys, linuxHostileKey)
	l.LateCommands = append(l.LateCommands, linuxHostileCommands[:len(linuxHostileCommands)-1]...) // not "% percent"
	files, err := RenderLinux(l)
	require.NoError(t, err)
	k := parseKickstart(t, linuxFile(t, files, LinuxKickstartFile))
	hash, err := HashPassword(l.Password, l.PasswordSalt)
	require.NoError(t, err)

	assert.Equal(t, [][]string{{"user", "--name=kubenode", "--groups=wheel", "--iscrypted", "--password=" + hash}}, k.commands("user"))
	// The first key by sshkey, the others appended by a %post script: run
	// it against a scratch directory in place of the target's /home.
	require.Len(t, k.commands("sshkey"), 1)
	assert.Equal(t, []string{"sshkey", "--username=kubenode", l.SSHAuthorizedKeys[0]}, k.commands("sshkey")[0])
	posts := k.sections["%post --erroronfail"]
	require.Len(t, posts, 2+len(l.LateCommands))
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "home/kubenode/.ssh"), 0o700))
	out, err := exec.Command(requireTool(t, "sh"), "-c", strings.ReplaceAll(posts[1], "/home/", root+"/home/")).CombinedOutput()
	require.NoError(t, err, string(out))
	appended, err := os.ReadFile(filepath.Join(root, "home/kubenode/.ssh/authorized_keys"))
	require.NoError(t, err)
	assert.Equal(t, strings.Join(l.SSHAuthorizedKeys[1:], "\n")+"\n", string(appended))
	for name, want := range map[string][]string{
		"lang":       {"lang", "en_US.UTF-8"},
		"keyboard":   {"keyboard", "--xlayouts=us"},
		"timezone":   {"timezone", "UTC", "--utc"},
		"network":    {"network", "--bootproto=dhcp", "--device=link", "--activate", "--onboot=on", "--hostname=node-1.example.com"},
		"rootpw":     {"rootpw", "--lock"},
		"ignoredisk": {"ignoredisk", "--only-use=vda"},
		"clearpart":  {"clearpart", "--all", "--initlabel", "--drives=vda"},
		"autopart":   {"autopart", "--type=lvm"},
		"bootloader": {"bootloader", "--location=mbr", "--boot-drive=vda"},
		"services":   {"services", "--enabled=sshd"},
	} {
		assert.Equal(t, [][]string{want}, k.commands(name), name)
	}
	assert.Equal(t, []string{"@core\nopenssh-server\nqemu-guest-agent\ncontainerd.io"}, k.sections["%packages"])
	assert.Equal(t, l.sudoersScript(), posts[0])
	assert.Equal(t, l.LateCommands, posts[2:])
	assert.Equal(t, "%packages", k.order[0])
}

// TestLinuxLateCommandsSurviveTheShell runs the late commands as the
// installers do (sh -c) with stand-ins for curtin and in-target that record
// their arguments: each command must arrive as the one word "sh -c" runs
// inside the target. A command that escaped its quoting would touch the
// canary file.
func TestLinuxLateCommandsSurviveTheShell(t *testing.T) {
	sh := requireTool(t, "sh")
	dir := t.TempDir()
	canary := filepath.Join(dir, "escaped")
	cmds := []string{
		`echo "it's $HOME" > /nonexistent/x; touch '` + canary + `'`,
		`touch "` + canary + `" 'it'\''s' \`,
		"`touch " + canary + "` $(touch " + canary + ")",
		"touch " + canary,
	}
	bin := filepath.Join(dir, "bin")
	calls := filepath.Join(dir, "calls")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.MkdirAll(calls, 0o755))
	recorder := "#!/bin/sh\nn=$(ls \"$KUBENODE_CALLS\" | wc -l)\nprintf '%s\\0' \"${0##*/}\" \"$@\" > \"$KUBENODE_CALLS/$(printf %04d \"$n\")\"\n"
	for _, name := range []string{"curtin", "in-target", "chown"} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(recorder), 0o755))
	}
	run := func(t *testing.T, script string, args ...string) {
		t.Helper()
		c := exec.Command(sh, append([]string{"-c", script, "sh"}, args...)...)
		c.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBENODE_CALLS="+calls)
		out, err := c.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	recorded := func(t *testing.T) [][]string {
		t.Helper()
		entries, err := os.ReadDir(calls)
		require.NoError(t, err)
		var out [][]string
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(calls, e.Name()))
			require.NoError(t, err)
			out = append(out, strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"))
			require.NoError(t, os.Remove(filepath.Join(calls, e.Name())))
		}
		return out
	}
	l := Linux{Username: "kubenode", Password: "pw", SSHAuthorizedKeys: []string{linuxTestKeyEd25519, linuxHostileKey}, LateCommands: cmds}

	t.Run("ubuntu-autoinstall", func(t *testing.T) {
		l := l
		l.Flavor = FlavorUbuntuAutoinstall
		files, err := RenderLinux(l)
		require.NoError(t, err)
		a := linuxYAML(t, linuxFile(t, files, LinuxUserDataFile))["autoinstall"].(map[string]any)
		for _, c := range anyStrings(t, a["late-commands"]) {
			run(t, c) // subiquity runs a string command with sh -c
		}
		want := [][]string{}
		for _, c := range append([]string{l.sudoersScript()}, cmds...) {
			want = append(want, []string{"curtin", "in-target", "--target=/target", "--", "sh", "-c", c})
		}
		assert.Equal(t, want, recorded(t))
		assert.NoFileExists(t, canary)
	})

	t.Run("preseed", func(t *testing.T) {
		l := l
		l.Flavor = FlavorPreseed
		files, err := RenderLinux(l)
		require.NoError(t, err)
		run(t, parsePreseed(t, files[0].Data)["preseed/late_command"]) // d-i: sh -c "$command"
		want := [][]string{
			{"in-target", "sh", "-c", l.sudoersScript()},
			{"in-target", "sh", "-c", preseedKeysScript("kubenode"), "sh", linuxTestKeyEd25519, linuxHostileKey},
		}
		for _, c := range cmds {
			want = append(want, []string{"in-target", "sh", "-c", c})
		}
		assert.Equal(t, want, recorded(t))
		assert.NoFileExists(t, canary)
	})

	// The scripts kubenode runs in the target, run here against a
	// scratch directory in place of the target's /etc and /home.
	t.Run("sudoers script", func(t *testing.T) {
		root := t.TempDir()
		run(t, strings.ReplaceAll(l.sudoersScript(), "/etc/", root+"/etc/"))
		path := filepath.Join(root, "etc/sudoers.d/90-kubenode-kubenode")
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "kubenode ALL=(ALL) NOPASSWD:ALL\n", string(b))
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o440), st.Mode().Perm())
	})

	t.Run("preseed keys script", func(t *testing.T) {
		root := t.TempDir()
		run(t, strings.ReplaceAll(preseedKeysScript("kubenode"), "/home/", root+"/home/"), l.SSHAuthorizedKeys...)
		path := filepath.Join(root, "home/kubenode/.ssh/authorized_keys")
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, linuxTestKeyEd25519+"\n"+linuxHostileKey+"\n", string(b))
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
		st, err = os.Stat(filepath.Dir(path))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
		assert.Equal(t, [][]string{{"chown", "-R", "kubenode:", filepath.Join(root, "home/kubenode/.ssh")}}, recorded(t))
	})
}

func TestLinuxValidateReportsEveryProblem(t *testing.T) {
	l := Linux{
		Flavor:            "arch",
		Hostname:          "Bad_Host",
		Username:          "root",
		Password:          "pw\nroot::0:0::/:/bin/sh",
		PasswordHash:      "hunter2",
		PasswordSalt:      "bad salt!",
		SSHAuthorizedKeys: []string{"AAAAC3NzaC1lZDI1NTE5", "ssh-ed25519 AAAAAAAA", "ssh-rsa " + strings.Fields(linuxTestKeyEd25519)[1], "ssh-foo AAAA", linuxTestKeyEd25519 + "\nssh-rsa x"},
		Packages:          []string{"ok", "bad pkg;rm"},
		Disk:              "/dev/disk/by-id/x",
		StorageLayout:     "zfs",
		Locale:            "en US",
		Keyboard:          "US;",
		Timezone:          "../etc/passwd",
		LateCommands:      []string{"", "a\nb", "ok", "x\u2028y"},
		InstanceID:        "iid/../x",
	}
	err := l.Validate()
	require.Error(t, err)
	assert.True(t, IsValidation(err))
	msg := err.Error()
	for _, want := range []string{
		`flavor: "arch" is not allowed; use one of "ubuntu-autoinstall", "cloud-init", "preseed", "kickstart"`,
		`hostname: "Bad_Host" is not allowed; use RFC 1123 labels`,
		`username: "root" is a system account or group`,
		`password: contains a control character`,
		`password_hash: set password or password_hash, not both`,
		`password_hash: is not a crypt hash`,
		`password_salt: "bad salt!" is not allowed`,
		`ssh_authorized_keys[0]: does not look like an OpenSSH public key line`,
		`ssh_authorized_keys[1]: the key data does not hold a "ssh-ed25519" key`,
		`ssh_authorized_keys[2]: the key data does not hold a "ssh-rsa" key`,
		`ssh_authorized_keys[3]: key type "ssh-foo" is not allowed`,
		`ssh_authorized_keys[4]: contains a control character`,
		`packages[1]: "bad pkg;rm" is not a package name`,
		`disk: "/dev/disk/by-id/x" is not allowed; use a kernel disk name`,
		`storage_layout: "zfs" is not allowed; use "direct", "lvm"`,
		`locale: "en US" is not allowed`,
		`keyboard: "US;" is not allowed`,
		`timezone: "../etc/passwd" is not allowed`,
		`late_commands[0]: is empty`,
		`late_commands[1]: contains a control character`,
		`late_commands[3]: contains a Unicode line or paragraph separator`,
		`instance_id: "iid/../x" is not allowed`,
	} {
		assert.Contains(t, msg, want)
	}
	assert.Contains(t, msg, "22 problems")
}

func TestLinuxValidatePerFlavor(t *testing.T) {
	ok := Linux{Username: "kubenode", SSHAuthorizedKeys: []string{linuxTestKeyEd25519}}
	for _, tc := range []struct {
		name    string
		flavors []string // nil: every flavor
		edit    func(*Linux)
		want    string // "": valid
	}{
		{"no flavor", []string{""}, func(*Linux) {}, `flavor: is required; use one of "ubuntu-autoinstall"`},
		{"no credentials", nil, func(l *Linux) { l.SSHAuthorizedKeys = nil }, "password: nobody could log in: set password, password_hash or ssh_authorized_keys"},
		{"no username", nil, func(l *Linux) { l.Username = "" }, "username: is required"},
		{"salt without password", nil, func(l *Linux) { l.PasswordSalt = "abc" }, "password_salt: is only used to hash password"},
		{"cloud-init disk", []string{FlavorCloudInit}, func(l *Linux) { l.Disk = "/dev/vda" }, `disk: is not used by the "cloud-init" flavor`},
		{"cloud-init layout", []string{FlavorCloudInit}, func(l *Linux) { l.StorageLayout = StorageLVM }, `storage_layout: is not used by the "cloud-init" flavor`},
		{"kickstart section keyword", []string{FlavorKickstart}, func(l *Linux) { l.LateCommands = []string{"  %end"} }, "late_commands[0]: starts with '%'"},
		{"percent elsewhere", []string{FlavorUbuntuAutoinstall, FlavorCloudInit, FlavorPreseed}, func(l *Linux) { l.LateCommands = []string{"%end"} }, ""},
		{"hostile username", nil, func(l *Linux) { l.Username = "kubenode\nroot" }, `username: "kubenode\nroot" is not allowed`},
		{"shell username", nil, func(l *Linux) { l.Username = "$(reboot)" }, `username: "$(reboot)" is not allowed`},
		{"quote username", nil, func(l *Linux) { l.Username = "a'b" }, `username: "a'b" is not allowed`},
		{"long username", nil, func(l *Linux) { l.Username = strings.Repeat("a", 33) }, `username: "` + strings.Repeat("a", 33) + `" is not allowed`},
		{"long label", nil, func(l *Linux) { l.Hostname = strings.Repeat("a", 64) }, "hostname: "},
		{"long hostname", nil, func(l *Linux) { l.Hostname = strings.Repeat("a.", 127) + "ab" }, "hostname: is 256 characters"},
		{"hyphen label", nil, func(l *Linux) { l.Hostname = "node-.example" }, "hostname: "},
		{"yaml-looking hostname", nil, func(l *Linux) { l.Hostname = "yes" }, ""},
		{"password only", nil, func(l *Linux) { l.SSHAuthorizedKeys = nil; l.Password = "pw" }, ""},
		{"hash only", nil, func(l *Linux) {
			l.SSHAuthorizedKeys = nil
			l.PasswordHash = "$y$j9T$ZIya5nXa7dVoFFDe3kfIr0$IBa.oUCv0W4OdZ1URnBay7smdoK3EAk0z9oFnkJGIJ8"
		}, ""},
		{"nvme disk", []string{FlavorUbuntuAutoinstall, FlavorPreseed, FlavorKickstart}, func(l *Linux) { l.Disk = "/dev/nvme0n1" }, ""},
		{"etc timezone", nil, func(l *Linux) { l.Timezone = "Etc/GMT+5" }, ""},
		{"locale modifier", nil, func(l *Linux) { l.Locale = "sr_RS.UTF-8@latin" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flavors := tc.flavors
			if flavors == nil {
				flavors = linuxFlavors
			}
			for _, flavor := range flavors {
				l := ok
				l.Flavor = flavor
				tc.edit(&l)
				err := l.Validate()
				_, renderErr := RenderLinux(l)
				if tc.want == "" {
					assert.NoError(t, err, flavor)
					assert.NoError(t, renderErr, flavor)
					continue
				}
				require.Error(t, err, flavor)
				assert.Contains(t, err.Error(), tc.want, flavor)
				assert.Contains(t, err.Error(), ": 1 problem\n", flavor)
				assert.True(t, IsValidation(renderErr), flavor)
			}
		})
	}
}

// TestLinuxSeedDisc writes each flavor's disc and reads it back.
func TestLinuxSeedDisc(t *testing.T) {
	want := map[string]struct {
		label string
		names []string
	}{
		"ubuntu-autoinstall": {"cidata", []string{"meta-data", "user-data"}},
		"cloud-init":         {"cidata", []string{"meta-data", "user-data"}},
		"debian-preseed":     {"PRESEED", []string{"preseed.cfg"}},
		"rocky-kickstart":    {"OEMDRV", []string{"ks.cfg"}},
	}
	for dir, l := range linuxGoldenConfigs() {
		t.Run(dir, func(t *testing.T) {
			d, err := LinuxSeed(l)
			require.NoError(t, err)
			assert.Equal(t, want[dir].label, d.Label)
			var buf bytes.Buffer
			require.NoError(t, WriteISO(&buf, d))
			got, err := ReadISO(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			assert.Equal(t, want[dir].label, got.Label)
			var names []string
			for _, f := range got.Files {
				names = append(names, f.Name)
			}
			sort.Strings(names)
			assert.Equal(t, want[dir].names, names)
			rendered, err := RenderLinux(l)
			require.NoError(t, err)
			for _, f := range rendered {
				data, err := got.File(f.Name)
				require.NoError(t, err)
				assert.Equal(t, string(f.Data), string(data), f.Name)
			}
		})
	}
	_, err := LinuxSeed(Linux{Flavor: FlavorKickstart})
	assert.True(t, IsValidation(err))
}

func TestPosixShellQuote(t *testing.T) {
	sh := requireTool(t, "sh")
	for _, s := range append([]string{"", "'", "''", `'\''`, "a b"}, linuxHostileCommands...) {
		out, err := exec.Command(sh, "-c", "printf %s "+posixShellQuote(s)).Output()
		require.NoError(t, err, s)
		assert.Equal(t, s, string(out))
	}
}

func TestKSQuote(t *testing.T) {
	for _, s := range append([]string{"plain", "$6$x$y", "a b", `"`, `\`, `\"`, "#x", "x#", "'"}, linuxHostileCommands...) {
		assert.Equal(t, []string{s}, shlexSplit(t, ksQuote(s)), "%q quoted as %s", s, ksQuote(s))
	}
}

// The installer's package downloads go through http_proxy on every flavor
// that downloads; kickstart installs from the DVD and refuses it.
func TestLinuxInstallerProxy(t *testing.T) {
	const proxy = "http://user:p%40ss@proxy.example.com:3128/"
	base := Linux{Username: "kubenode", SSHAuthorizedKeys: []string{linuxTestKeyEd25519}, HTTPProxy: proxy}

	l := base
	l.Flavor = FlavorUbuntuAutoinstall
	files, err := RenderLinux(l)
	require.NoError(t, err)
	a := linuxYAML(t, linuxFile(t, files, LinuxUserDataFile))["autoinstall"].(map[string]any)
	assert.Equal(t, proxy, a["proxy"])

	l = base
	l.Flavor = FlavorCloudInit
	files, err = RenderLinux(l)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"proxy": proxy}, linuxYAML(t, linuxFile(t, files, LinuxUserDataFile))["apt"])

	l = base
	l.Flavor = FlavorPreseed
	files, err = RenderLinux(l)
	require.NoError(t, err)
	assert.Contains(t, string(linuxFile(t, files, LinuxPreseedFile)), "d-i mirror/http/proxy string "+proxy+"\n")

	l = base
	l.Flavor = FlavorKickstart
	_, err = RenderLinux(l)
	assert.ErrorContains(t, err, `http_proxy: is not used by the "kickstart" flavor`)

	for _, bad := range []string{"proxy.example.com:3128", "ftp://proxy.example.com/", "http://", "http://proxy.example.com/\nx", "http://a b/"} {
		l = base
		l.Flavor = FlavorPreseed
		l.HTTPProxy = bad
		_, err = RenderLinux(l)
		assert.ErrorContains(t, err, "http_proxy: ", bad)
	}

	// Without a proxy nothing changes: no key, preseed's empty answer.
	l = base
	l.HTTPProxy = ""
	l.Flavor = FlavorCloudInit
	files, err = RenderLinux(l)
	require.NoError(t, err)
	assert.NotContains(t, linuxYAML(t, linuxFile(t, files, LinuxUserDataFile)), "apt")
}
