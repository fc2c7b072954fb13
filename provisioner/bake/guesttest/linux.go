// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package guesttest

import (
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// Linux is a communicator double for a Linux guest on which every step
// succeeds except those in Fail (step name -> output), which exit 1. Steps
// are the steps run, in order. Commands answers other commands (command ->
// its output, exit 0), and OSRelease a command that reads
// /etc/os-release; its package database (dpkg-query -W) holds Packages,
// LinuxPackages when nil; `runc --version` reports runc 1.3.0; anything
// else prints nothing.
type Linux struct {
	mu        sync.Mutex
	Fail      map[string]string
	Commands  map[string]string
	OSRelease string
	Steps     []string
	Packages  []string
}

// LinuxPackages are the double's packages as dpkg-query prints them in
// the bake's format (status, name, version, architecture, source); the
// last one was removed and left its configuration files.
var LinuxPackages = []string{
	"ii \tlibc6\t2.36-9+deb12u10\tamd64\tglibc",
	"ii \trunc\t1.1.5+ds1-1+deb12u1\tamd64\trunc",
	"rc \told-kernel\t6.1.0-1\tamd64\tlinux",
}

var linuxStepScript = regexp.MustCompile(`sh '/var/tmp/kubenode-bake/\d\d-([a-z-]+)\.sh'$`)

func (g *Linux) Start(_ context.Context, cmd *packersdk.RemoteCmd) error {
	g.mu.Lock()
	out, code := "", 0
	switch m := linuxStepScript.FindStringSubmatch(cmd.Command); {
	case cmd.Command == "id -u":
		out = "0\n"
	case g.Commands[cmd.Command] != "":
		out = g.Commands[cmd.Command]
	case g.OSRelease != "" && strings.Contains(cmd.Command, "/etc/os-release"):
		out = g.OSRelease
	case strings.Contains(cmd.Command, "dpkg-query -W -f='kubenode-package\\tdeb"):
		pkgs := g.Packages
		if pkgs == nil {
			pkgs = LinuxPackages
		}
		for _, p := range pkgs {
			out += "kubenode-package\tdeb\t" + p + "\n"
		}
	case strings.Contains(cmd.Command, "runc --version"):
		out = "1.3.0\n"
	case m != nil:
		g.Steps = append(g.Steps, m[1])
		if o, ok := g.Fail[m[1]]; ok {
			out, code = o, 1
		} else {
			out = "ok: " + m[1] + "\n"
		}
	}
	g.mu.Unlock()
	go func() {
		_, _ = io.WriteString(cmd.Stdout, out)
		cmd.SetExited(code)
	}()
	return nil
}

func (g *Linux) Upload(string, io.Reader, *os.FileInfo) error { return nil }
func (g *Linux) UploadDir(string, string, []string) error     { return nil }
func (g *Linux) Download(string, io.Writer) error             { return nil }
func (g *Linux) DownloadDir(string, string, []string) error   { return nil }
