// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// user-data and meta-data are built as typed structs and marshalled, never
// templated, so every value is quoted as YAML needs. Field order in the
// structs is the order in the file.

// cloudConfigHeader must be the first line of user-data: cloud-init reads
// the rest as cloud-config only after it.
const cloudConfigHeader = "#cloud-config\n"

// yamlStr is a string written plain only when it cannot be misread; else
// quoted. cloud-init and subiquity read YAML with PyYAML, a YAML 1.1
// parser, where plain "yes", "0755", "1_000" or "12:30" are not strings;
// a quoted scalar is a string under 1.1 and 1.2 alike. Single quotes keep
// commands readable (nothing inside is an escape); a string holding a
// single quote is double-quoted, and the encoder falls back to double
// quotes for any character single quotes cannot carry.
type yamlStr string

// yamlPlainRE matches strings no YAML 1.1 or 1.2 resolver reads as anything
// but a string (the encoder still quotes the old booleans such as "on").
var yamlPlainRE = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_./@+-]*$`)

// MarshalYAML implements yaml.Marshaler.
func (s yamlStr) MarshalYAML() (any, error) {
	if yamlPlainRE.MatchString(string(s)) {
		return string(s), nil
	}
	style := yaml.SingleQuotedStyle
	if strings.Contains(string(s), "'") {
		style = yaml.DoubleQuotedStyle
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(s), Style: style}, nil
}

func yamlStrs(ss []string) []yamlStr {
	out := make([]yamlStr, len(ss))
	for i, s := range ss {
		out[i] = yamlStr(s)
	}
	return out
}

// marshalYAML encodes v with two-space indents after an optional header line.
func marshalYAML(header string, v any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("linux: encoding YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("linux: encoding YAML: %w", err)
	}
	return b.Bytes(), nil
}

// metaData is NoCloud meta-data.
type metaData struct {
	InstanceID    yamlStr `yaml:"instance-id"`
	LocalHostname yamlStr `yaml:"local-hostname"`
}

func renderMetaData(l Linux) ([]byte, error) {
	return marshalYAML("", metaData{InstanceID: yamlStr(l.InstanceID), LocalHostname: yamlStr(l.Hostname)})
}

// autoinstallDoc is subiquity's autoinstall config, carried in cloud-config
// under the "autoinstall" key (see the autoinstall reference in
// canonical/subiquity, doc/reference/autoinstall-reference.rst).
type autoinstallDoc struct {
	Autoinstall autoinstall `yaml:"autoinstall"`
}

type autoinstall struct {
	Version      int                 `yaml:"version"`
	Locale       yamlStr             `yaml:"locale"`
	Keyboard     keyboardLayout      `yaml:"keyboard"`
	Timezone     yamlStr             `yaml:"timezone"`
	Identity     autoinstallIdentity `yaml:"identity"`
	SSH          autoinstallSSH      `yaml:"ssh"`
	Storage      autoinstallStorage  `yaml:"storage"`
	Packages     []yamlStr           `yaml:"packages"`
	LateCommands []yamlStr           `yaml:"late-commands"`
	Proxy        yamlStr             `yaml:"proxy,omitempty"`
}

type keyboardLayout struct {
	Layout yamlStr `yaml:"layout"`
}

type autoinstallIdentity struct {
	Hostname yamlStr `yaml:"hostname"`
	Username yamlStr `yaml:"username"`
	Password yamlStr `yaml:"password"`
}

type autoinstallSSH struct {
	InstallServer  bool      `yaml:"install-server"`
	AuthorizedKeys []yamlStr `yaml:"authorized-keys,omitempty"`
	AllowPW        bool      `yaml:"allow-pw"`
}

type autoinstallStorage struct {
	Layout autoinstallLayout `yaml:"layout"`
}

type autoinstallLayout struct {
	Name  yamlStr           `yaml:"name"`
	Match *autoinstallMatch `yaml:"match,omitempty"`
}

// autoinstallMatch picks the disk; path is compared (as a glob) with the
// disk's kernel path, which is why Disk is a plain /dev/<name>.
type autoinstallMatch struct {
	Path yamlStr `yaml:"path"`
}

// lockedPassword is the shadow password field of an account that has no
// password: no hash equals it, so password logins fail while ssh keys work.
const lockedPassword = "!"

// curtinInTarget runs a shell command line inside the installed system.
// Subiquity runs a string late-command with sh -c in the installer; curtin
// in-target chroots into /target and passes the rest of its arguments on
// unchanged, so the command survives as one single-quoted word.
func curtinInTarget(cmd string) string {
	return "curtin in-target --target=/target -- sh -c " + posixShellQuote(cmd)
}

func renderAutoinstall(l Linux, hash string) ([]File, error) {
	a := autoinstall{
		Version:  1,
		Proxy:    yamlStr(l.HTTPProxy),
		Locale:   yamlStr(l.Locale),
		Keyboard: keyboardLayout{Layout: yamlStr(l.Keyboard)},
		Timezone: yamlStr(l.Timezone),
		Identity: autoinstallIdentity{
			Hostname: yamlStr(l.Hostname),
			Username: yamlStr(l.Username),
			// identity.password is required; subiquity sets it with
			// chpasswd --encrypted, so "!" leaves the account locked.
			Password: yamlStr(hash),
		},
		SSH: autoinstallSSH{
			InstallServer:  true,
			AuthorizedKeys: yamlStrs(l.SSHAuthorizedKeys),
			AllowPW:        hash != "",
		},
		Storage:  autoinstallStorage{Layout: autoinstallLayout{Name: yamlStr(l.StorageLayout)}},
		Packages: yamlStrs(l.packages()),
	}
	if hash == "" {
		a.Identity.Password = lockedPassword
	}
	if l.Disk != "" {
		a.Storage.Layout.Match = &autoinstallMatch{Path: yamlStr(l.Disk)}
	}
	a.LateCommands = append(a.LateCommands, yamlStr(curtinInTarget(l.sudoersScript())))
	for _, c := range l.LateCommands {
		a.LateCommands = append(a.LateCommands, yamlStr(curtinInTarget(c)))
	}
	return noCloudFiles(l, autoinstallDoc{Autoinstall: a})
}

// noCloudFiles returns the NoCloud pair: user-data (doc as #cloud-config)
// and meta-data.
func noCloudFiles(l Linux, doc any) ([]File, error) {
	user, err := marshalYAML(cloudConfigHeader, doc)
	if err != nil {
		return nil, err
	}
	meta, err := renderMetaData(l)
	if err != nil {
		return nil, err
	}
	return []File{{Name: LinuxUserDataFile, Data: user}, {Name: LinuxMetaDataFile, Data: meta}}, nil
}

// cloudConfig is the subset of cloud-config the cloud-init flavor writes
// (modules set_hostname, users_groups, ssh, package_update_upgrade_install,
// runcmd, timezone, locale, keyboard).
type cloudConfig struct {
	Hostname yamlStr `yaml:"hostname"`
	FQDN     yamlStr `yaml:"fqdn,omitempty"`
	// ManageEtcHosts maps the host name to a loopback address, so sudo and
	// anything else that resolves it works without DNS.
	ManageEtcHosts bool            `yaml:"manage_etc_hosts"`
	Users          []cloudUser     `yaml:"users"`
	SSHPwauth      bool            `yaml:"ssh_pwauth"`
	Packages       []yamlStr       `yaml:"packages,omitempty"`
	Runcmd         []yamlStr       `yaml:"runcmd,omitempty"`
	Timezone       yamlStr         `yaml:"timezone,omitempty"`
	Locale         yamlStr         `yaml:"locale,omitempty"`
	Keyboard       *keyboardLayout `yaml:"keyboard,omitempty"`
	Apt            *cloudApt       `yaml:"apt,omitempty"`
}

// cloudApt is cloud-init's apt configuration; proxy is the HTTP proxy
// apt's downloads go through.
type cloudApt struct {
	Proxy yamlStr `yaml:"proxy"`
}

// cloudUser is one entry of users. Listing users replaces the image's
// default user, so the build account is the only login.
type cloudUser struct {
	Name              yamlStr   `yaml:"name"`
	Sudo              yamlStr   `yaml:"sudo"`
	Shell             yamlStr   `yaml:"shell"`
	LockPasswd        bool      `yaml:"lock_passwd"`
	Passwd            yamlStr   `yaml:"passwd,omitempty"`
	SSHAuthorizedKeys []yamlStr `yaml:"ssh_authorized_keys,omitempty"`
}

func renderCloudInit(l Linux, hash string) ([]File, error) {
	c := cloudConfig{
		Hostname:       yamlStr(l.shortHostname()),
		ManageEtcHosts: true,
		Users: []cloudUser{{
			Name:              yamlStr(l.Username),
			Sudo:              yamlStr("ALL=(ALL) NOPASSWD:ALL"),
			Shell:             "/bin/bash",
			LockPasswd:        hash == "",
			Passwd:            yamlStr(hash),
			SSHAuthorizedKeys: yamlStrs(l.SSHAuthorizedKeys),
		}},
		SSHPwauth: hash != "",
		Packages:  yamlStrs(l.cloudInitPackages()),
		// runcmd writes each string as one line of a shell script.
		Runcmd:   yamlStrs(l.LateCommands),
		Timezone: yamlStr(l.Timezone),
		Locale:   yamlStr(l.Locale),
	}
	if l.Hostname != l.shortHostname() {
		c.FQDN = yamlStr(l.Hostname)
	}
	if l.Keyboard != "" {
		c.Keyboard = &keyboardLayout{Layout: yamlStr(l.Keyboard)}
	}
	if l.HTTPProxy != "" {
		c.Apt = &cloudApt{Proxy: yamlStr(l.HTTPProxy)}
	}
	return noCloudFiles(l, c)
}
