// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Flavors of Linux seed: which installer (or first-boot agent) reads it.
const (
	// FlavorUbuntuAutoinstall is Ubuntu Server's live installer (subiquity,
	// 20.04 and later): an autoinstall section in NoCloud user-data. The
	// installer asks for confirmation unless "autoinstall" is on the kernel
	// command line.
	FlavorUbuntuAutoinstall = "ubuntu-autoinstall"
	// FlavorCloudInit is plain cloud-init NoCloud user-data for a cloud
	// image that is already installed (no partitioning, no installer).
	FlavorCloudInit = "cloud-init"
	// FlavorPreseed is the Debian installer (d-i). d-i does not look for a
	// disc by label: serve preseed.cfg over HTTP (preseed/url=) or point
	// preseed/file= at it; "auto=true priority=critical" on the kernel
	// command line keeps the early locale and keyboard questions away.
	FlavorPreseed = "preseed"
	// FlavorKickstart is Anaconda (RHEL, Rocky, Alma, CentOS Stream,
	// Fedora), which loads ks.cfg by itself from a volume labelled OEMDRV.
	FlavorKickstart = "kickstart"
)

var linuxFlavors = []string{FlavorUbuntuAutoinstall, FlavorCloudInit, FlavorPreseed, FlavorKickstart}

// Storage layouts for the installer flavors.
const (
	// StorageDirect puts the root file system on a plain partition.
	StorageDirect = "direct"
	// StorageLVM puts it on an LVM logical volume.
	StorageLVM = "lvm"
)

// LabelPreseed is the label of a preseed seed disc. d-i does not search for
// it (see FlavorPreseed); it only names the disc for whoever mounts it.
const LabelPreseed = "PRESEED"

// Names of the files on Linux seed discs.
const (
	LinuxUserDataFile  = "user-data"
	LinuxMetaDataFile  = "meta-data"
	LinuxPreseedFile   = "preseed.cfg"
	LinuxKickstartFile = "ks.cfg"
)

// Linux describes an unattended Linux install (or, for the cloud-init
// flavor, the first boot of a cloud image). Field comments name the HCL key
// each field is set by.
//
// Every value ends up in YAML, a d-i preseed line or a kickstart line, so
// Validate rejects control characters (a newline would start a new preseed
// or kickstart line) and checks names against what the installers accept.
// Rendering is deterministic except for the salt drawn when Password is set
// without PasswordSalt.
type Linux struct {
	// Flavor is "ubuntu-autoinstall", "cloud-init", "preseed" or
	// "kickstart". Key: flavor.
	Flavor string
	// Hostname is one or more RFC 1123 labels in lower case, dot-separated
	// (default "kubenode"). Key: hostname.
	Hostname string
	// Username is the account the build logs in with; it gets
	// passwordless sudo. Key: username.
	Username string
	// Password is that account's password in plain text. Only its SHA-512
	// crypt hash is written to the seed. Key: password.
	Password string
	// PasswordHash is an already hashed password ("$6$...", "$5$..." or
	// yescrypt "$y$..."), instead of password. With neither, the account
	// has no password (it is locked for password logins) and
	// ssh_authorized_keys are required. Key: password_hash.
	PasswordHash string
	// PasswordSalt fixes the salt password is hashed with (1 to 16 of
	// [./0-9A-Za-z]), for reproducible output; default random. Key: password_salt.
	PasswordSalt string
	// SSHAuthorizedKeys are OpenSSH public key lines ("ssh-ed25519 AAAA...
	// comment") installed for the account. Key: ssh_authorized_keys.
	SSHAuthorizedKeys []string
	// Packages are installed besides openssh-server, which the installer
	// flavors always add; the cloud-init flavor asks for these only.
	// Key: packages.
	Packages []string
	// Disk is the install target, /dev/<kernel name> such as "/dev/vda";
	// default: the installer's choice (the only disk, or for Ubuntu the
	// largest). Not for cloud-init. Key: disk.
	Disk string
	// StorageLayout is "direct" (default) or "lvm". Not for cloud-init.
	// Key: storage_layout.
	StorageLayout string
	// Locale is the system locale (default "en_US.UTF-8"; cloud-init: the
	// image's own unless set). Key: locale.
	Locale string
	// Keyboard is the keyboard layout, e.g. "us" (default; cloud-init: the
	// image's own unless set). Key: keyboard.
	Keyboard string
	// Timezone is a tz database name, e.g. "UTC" (default; cloud-init: the
	// image's own unless set) or "Europe/Berlin". Key: timezone.
	Timezone string
	// LateCommands are shell command lines run at the end of the install
	// inside the installed system, in order; a failing command fails the
	// install (cloud-init: runs them at first boot and carries on).
	// Key: late_commands.
	LateCommands []string
	// HTTPProxy is the HTTP proxy the installer's package downloads go
	// through, "http://[user:password@]host:port/" (autoinstall: proxy;
	// preseed: mirror/http/proxy; cloud-init: apt's proxy, Debian-family
	// images only). Not for kickstart, which installs from the DVD. It
	// covers the OS install only: kubenode-bake's http_proxy covers the
	// bake and containerd. Key: http_proxy.
	HTTPProxy string
	// InstanceID is the NoCloud instance-id (default "iid-" + hostname);
	// changing it makes cloud-init run its per-instance modules again.
	// Key: instance_id.
	InstanceID string
}

var (
	linuxLabelRE      = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	linuxUsernameRE   = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	linuxPackageRE    = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9+._:-]*$`)
	linuxDiskRE       = regexp.MustCompile(`^/dev/[a-z][a-z0-9]{0,31}$`)
	linuxLocaleRE     = regexp.MustCompile(`^(C|POSIX|[a-z]{2,3}(_[A-Z]{2})?)(\.[A-Za-z0-9-]{1,16})?(@[A-Za-z0-9]{1,16})?$`)
	linuxKeyboardRE   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	linuxTimezoneRE   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z][A-Za-z0-9_+-]*){0,2}$`)
	linuxInstanceIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$`)
	// An authorized_keys line without options: type, base64 blob, comment.
	linuxSSHKeyRE = regexp.MustCompile(`^([a-z0-9@.-]+) ([A-Za-z0-9+/]+={0,2})( .*)?$`)
)

// linuxSSHKeyTypes are the key types OpenSSH's sshd accepts in authorized_keys.
var linuxSSHKeyTypes = []string{
	"ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
	"sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com", "ssh-dss",
}

// linuxReservedUsernames are accounts and groups the base systems already
// have (Debian, Ubuntu, RHEL); subiquity and d-i refuse such a name, and
// on the others the install would fail or reuse a system account.
var linuxReservedUsernames = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`root daemon bin sys sync games man lp mail news uucp proxy
		www-data backup list irc gnats nobody nogroup adm tty disk kmem dialout fax voice cdrom
		floppy tape sudo audio dip operator src shadow utmp video sasl plugdev staff users admin
		wheel halt shutdown ftp input render kvm netdev lxd syslog messagebus sshd ssh _apt
		systemd-journal systemd-network systemd-resolve systemd-timesync polkitd dbus tss
		chrony rpc rpcuser`) {
		linuxReservedUsernames[n] = true
	}
}

// linuxOpenSSHServer is installed on every flavor: the build connects over SSH.
const linuxOpenSSHServer = "openssh-server"

// withDefaults returns l with every unset field given its default. The
// cloud-init flavor keeps the image's own locale, keyboard and time zone
// unless they are set: cloud images need not ship the locales package or
// a keyboard service, and cloud-init fails the module when they are missing.
func (l Linux) withDefaults() Linux {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&l.Hostname, "kubenode")
	def(&l.InstanceID, "iid-"+l.Hostname)
	if l.Flavor != FlavorCloudInit {
		def(&l.StorageLayout, StorageDirect)
		def(&l.Locale, "en_US.UTF-8")
		def(&l.Keyboard, "us")
		def(&l.Timezone, "UTC")
	}
	return l
}

// Validate reports every problem with l at once, each naming its HCL key.
func (l Linux) Validate() error {
	instanceIDSet := l.InstanceID != ""
	l = l.withDefaults()
	p := &problems{}
	switch {
	case l.Flavor == "":
		p.add("flavor", "is required; use one of %s", quoteList(linuxFlavors...))
	case !oneOf(l.Flavor, linuxFlavors...):
		p.add("flavor", "%q is not allowed; use one of %s", l.Flavor, quoteList(linuxFlavors...))
	}
	hostnameOK := checkLinuxHostname(p, l.Hostname)
	checkLinuxUsername(p, l.Username)
	checkLinuxCredentials(p, l)
	for i, k := range l.SSHAuthorizedKeys {
		checkLinuxSSHKey(p, fmt.Sprintf("ssh_authorized_keys[%d]", i), k)
	}
	for i, pkg := range l.Packages {
		if !linuxPackageRE.MatchString(pkg) {
			p.add(fmt.Sprintf("packages[%d]", i), "%q is not a package name: use letters, digits and + . _ : -, starting with a letter or digit", pkg)
		}
	}
	if l.Flavor == FlavorCloudInit {
		// A cloud image is already partitioned: saying where to install
		// would be silently ignored.
		if l.Disk != "" {
			p.add("disk", "is not used by the %q flavor (the cloud image is already installed); remove it", FlavorCloudInit)
		}
		if l.StorageLayout != "" {
			p.add("storage_layout", "is not used by the %q flavor (the cloud image is already installed); remove it", FlavorCloudInit)
		}
	} else {
		if l.Disk != "" && !linuxDiskRE.MatchString(l.Disk) {
			p.add("disk", "%q is not allowed; use a kernel disk name such as \"/dev/vda\", \"/dev/sda\" or \"/dev/nvme0n1\", or leave it empty for the installer's choice", l.Disk)
		}
		if !oneOf(l.StorageLayout, StorageDirect, StorageLVM) {
			p.add("storage_layout", "%q is not allowed; use %s", l.StorageLayout, quoteList(StorageDirect, StorageLVM))
		}
	}
	checkLinuxToken(p, "locale", l.Locale, linuxLocaleRE, `a locale such as "en_US.UTF-8" or "C.UTF-8"`)
	checkLinuxToken(p, "keyboard", l.Keyboard, linuxKeyboardRE, `a keyboard layout such as "us" or "de"`)
	checkLinuxToken(p, "timezone", l.Timezone, linuxTimezoneRE, `a tz database name such as "UTC" or "America/New_York"`)
	for i, c := range l.LateCommands {
		field := fmt.Sprintf("late_commands[%d]", i)
		switch {
		case strings.TrimSpace(c) == "":
			p.add(field, "is empty")
		case linuxCheckText(c) != "":
			p.add(field, "%s; write one command line per entry", linuxCheckText(c))
		case l.Flavor == FlavorKickstart && strings.HasPrefix(strings.TrimSpace(c), "%"):
			// Anaconda would read a line starting with %end, %include
			// or %packages as kickstart, not as part of the script.
			p.add(field, "starts with '%%', which kickstart reads as a section keyword; wrap it, e.g. sh -c '...'")
		}
	}
	checkLinuxProxy(p, l)
	// The default instance-id is made from the host name: its problem is
	// the host name's.
	if (instanceIDSet || hostnameOK) && !linuxInstanceIDRE.MatchString(l.InstanceID) {
		p.add("instance_id", "%q is not allowed; use up to 255 letters, digits, '.', '_' and '-' (cloud-init makes it a directory name), starting with a letter or digit", l.InstanceID)
	}
	return p.err("linux")
}

// linuxCheckText is checkText for one line, also refusing the Unicode line
// and paragraph separators: Python's str.splitlines, which reads kickstart
// files, ends a line at them, and YAML 1.1 treats them as line breaks.
func linuxCheckText(s string) string {
	if why := checkText(s, false); why != "" {
		return why
	}
	if strings.ContainsAny(s, "\u2028\u2029") {
		return "contains a Unicode line or paragraph separator (U+2028, U+2029), which is not allowed here"
	}
	return ""
}

// checkLinuxHostname reports the host name's problem; false if it has one.
func checkLinuxHostname(p *problems, h string) bool {
	if len(h) > 253 {
		p.add("hostname", "is %d characters; a host name has at most 253", len(h))
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if !linuxLabelRE.MatchString(label) {
			p.add("hostname", "%q is not allowed; use RFC 1123 labels of 1 to 63 lower-case letters, digits and '-' (not first or last), separated by '.', e.g. \"node-1\" or \"node-1.example.com\"", h)
			return false
		}
	}
	return true
}

func checkLinuxUsername(p *problems, u string) {
	switch {
	case u == "":
		p.add("username", "is required: the account the build logs in with, e.g. \"kubenode\"")
	case !linuxUsernameRE.MatchString(u):
		p.add("username", "%q is not allowed; use up to 32 lower-case letters, digits, '_' and '-', starting with a letter or '_'", u)
	case linuxReservedUsernames[u]:
		p.add("username", "%q is a system account or group on common distributions; choose another name, e.g. \"kubenode\"", u)
	}
}

func checkLinuxCredentials(p *problems, l Linux) {
	if l.Password != "" {
		if why := linuxCheckText(l.Password); why != "" {
			p.add("password", "%s", why)
		}
	}
	if l.PasswordHash != "" {
		if l.Password != "" {
			p.add("password_hash", "set password or password_hash, not both")
		}
		if !isCryptHash(l.PasswordHash) {
			p.add("password_hash", "is not a crypt hash; give a \"$6$...\" (SHA-512), \"$5$...\" (SHA-256) or \"$y$...\" (yescrypt) hash, e.g. from `mkpasswd -m sha-512`, or set password instead")
		}
	}
	if l.PasswordSalt != "" {
		switch {
		case l.Password == "":
			p.add("password_salt", "is only used to hash password, which is not set; remove it")
		case !cryptSaltRE.MatchString(l.PasswordSalt):
			p.add("password_salt", "%q is not allowed; %s", l.PasswordSalt, ErrInvalidSalt)
		}
	}
	if l.Password == "" && l.PasswordHash == "" && len(l.SSHAuthorizedKeys) == 0 {
		p.add("password", "nobody could log in: set password, password_hash or ssh_authorized_keys")
	}
}

func checkLinuxSSHKey(p *problems, field, key string) {
	if why := linuxCheckText(key); why != "" {
		p.add(field, "%s", why)
		return
	}
	m := linuxSSHKeyRE.FindStringSubmatch(key)
	if m == nil {
		p.add(field, "does not look like an OpenSSH public key line (\"ssh-ed25519 AAAA... comment\", as in a .pub file; no options)")
		return
	}
	if !oneOf(m[1], linuxSSHKeyTypes...) {
		p.add(field, "key type %q is not allowed; use one of %s", m[1], quoteList(linuxSSHKeyTypes...))
		return
	}
	// The blob starts with its own key type: a mismatch means a truncated
	// or mangled paste, which sshd would silently ignore.
	blob, err := base64.StdEncoding.DecodeString(m[2])
	if err != nil || len(blob) < 4 {
		p.add(field, "the key data is not valid base64; copy the whole line from the .pub file")
		return
	}
	n := binary.BigEndian.Uint32(blob)
	if uint64(n) > uint64(len(blob)-4) || !bytes.Equal(blob[4:4+n], []byte(m[1])) {
		p.add(field, "the key data does not hold a %q key; copy the whole line from the .pub file", m[1])
	}
}

func checkLinuxToken(p *problems, field, v string, re *regexp.Regexp, what string) {
	if v != "" && !re.MatchString(v) {
		p.add(field, "%q is not allowed; use %s", v, what)
	}
}

// RenderLinux returns the seed files for l, with defaults applied: user-data
// and meta-data (ubuntu-autoinstall, cloud-init), preseed.cfg (preseed) or
// ks.cfg (kickstart).
func RenderLinux(l Linux) ([]File, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	l = l.withDefaults()
	hash, err := l.cryptedPassword()
	if err != nil {
		return nil, err
	}
	switch l.Flavor {
	case FlavorUbuntuAutoinstall:
		return renderAutoinstall(l, hash)
	case FlavorCloudInit:
		return renderCloudInit(l, hash)
	case FlavorPreseed:
		return []File{{Name: LinuxPreseedFile, Data: renderPreseed(l, hash)}}, nil
	default: // FlavorKickstart: Validate allows no other
		return []File{{Name: LinuxKickstartFile, Data: renderKickstart(l, hash)}}, nil
	}
}

// LinuxSeed returns the seed disc for l: label "cidata" with user-data and
// meta-data (ubuntu-autoinstall, cloud-init), "OEMDRV" with ks.cfg
// (kickstart) or "PRESEED" with preseed.cfg (preseed).
func LinuxSeed(l Linux) (Disc, error) {
	files, err := RenderLinux(l)
	if err != nil {
		return Disc{}, err
	}
	label := LabelCloudInit
	switch l.Flavor {
	case FlavorKickstart:
		label = LabelKickstart
	case FlavorPreseed:
		label = LabelPreseed
	}
	d := Disc{Label: label, Files: files}
	if err := d.Validate(); err != nil {
		return Disc{}, err
	}
	return d, nil
}

// cryptedPassword returns the hash to write, or "" when the account has no
// password (ssh keys only).
func (l Linux) cryptedPassword() (string, error) {
	if l.Password == "" {
		return l.PasswordHash, nil
	}
	h, err := HashPassword(l.Password, l.PasswordSalt)
	if err != nil {
		return "", fmt.Errorf("linux: hashing password: %w", err)
	}
	return h, nil
}

// sudoersLine gives the build account passwordless sudo. Packer's
// provisioners need root, and an account with only ssh keys has no
// password to give sudo.
func (l Linux) sudoersLine() string { return l.Username + " ALL=(ALL) NOPASSWD:ALL" }

// sudoersPath is a sudoers.d file name sudo reads: no '.' and no trailing '~'.
func (l Linux) sudoersPath() string { return "/etc/sudoers.d/90-kubenode-" + l.Username }

// sudoersScript writes sudoersLine, run inside the installed system. The
// line is double-quoted: it holds no '$', '`', '"' or '\\' (Validate allows
// none in a username), and single quotes would be escaped once more by
// every wrapper around the script.
func (l Linux) sudoersScript() string {
	path := l.sudoersPath()
	return `mkdir -p /etc/sudoers.d && echo "` + l.sudoersLine() + `" > ` + path + " && chmod 0440 " + path
}

// packages returns openssh-server and the extra packages, without repeats.
func (l Linux) packages() []string {
	return uniqueStrings(append([]string{linuxOpenSSHServer}, l.Packages...))
}

// cloudInitPackages is what the cloud-init flavor asks for: only the
// user's packages. Its image already answers SSH, and a seed without
// packages keeps cloud-init's first boot from running apt-get (which would
// hold the dpkg lock while the build connects and starts its own).
func (l Linux) cloudInitPackages() []string { return uniqueStrings(l.Packages) }

// uniqueStrings keeps the first of each string, in order.
func uniqueStrings(in []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, p := range in {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// shortHostname is the first label of the host name.
func (l Linux) shortHostname() string {
	short, _, _ := strings.Cut(l.Hostname, ".")
	return short
}

// posixShellQuote quotes s as one POSIX shell word. Inside single quotes
// nothing is special; a single quote in s closes the quoting, is written
// inside double quotes and reopens it. That adds no backslash, which keeps
// the d-i late_command line free of any escape but the user's own.
func posixShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// checkLinuxProxy accepts an http or https URL with a host, on the flavors
// whose installer downloads packages.
func checkLinuxProxy(p *problems, l Linux) {
	if l.HTTPProxy == "" {
		return
	}
	if l.Flavor == FlavorKickstart {
		p.add("http_proxy", "is not used by the %q flavor (Anaconda installs from the DVD); remove it", FlavorKickstart)
		return
	}
	if why := linuxCheckText(l.HTTPProxy); why != "" {
		p.add("http_proxy", "%s", why)
		return
	}
	u, err := url.Parse(l.HTTPProxy)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(l.HTTPProxy, " \t\"'") {
		p.add("http_proxy", "%q is not allowed; use a URL such as \"http://proxy.example.com:3128/\"", l.HTTPProxy)
	}
}
