// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzRenderWindows: for any user strings Validate accepts, the answer file
// is well-formed XML and every value reads back unchanged; nothing panics.
func FuzzRenderWindows(f *testing.F) {
	f.Add("Passw0rd!", "Administrator", "*", `cmd /c echo hi > C:\x.txt`, "UTC")
	f.Add("p<&>\"'ä😀", "packer", "node-01", "powershell -Command \"& { 'a' }\"", "W. Europe Standard Time")
	f.Add("]]>", "bob", "WIN", "<![CDATA[x]]>", "UTC")
	f.Fuzz(func(t *testing.T, pw, user, computer, cmd, tz string) {
		w := Windows{Version: "2025", Password: pw, Username: user, ComputerName: computer, TimeZone: tz, FirstLogonCommands: []string{cmd}}
		out, err := RenderWindows(w)
		if err != nil {
			if !IsValidation(err) {
				t.Fatalf("not a validation error: %v", err)
			}
			return
		}
		root := parseXML(t, out)
		oobe := root.pass(t, passOOBESystem).component(t, "Microsoft-Windows-Shell-Setup")
		if got := passwordValue(t, oobe.find("UserAccounts/AdministratorPassword"), "AdministratorPassword"); got != pw {
			t.Fatalf("administrator password %q read back as %q", pw, got)
		}
		if got := passwordValue(t, oobe.find("AutoLogon/Password"), "Password"); got != pw {
			t.Fatalf("autologon password %q read back as %q", pw, got)
		}
		wantUser := user
		if wantUser == "" {
			wantUser = "Administrator"
		}
		if got := oobe.find("AutoLogon/Username").Text; got != wantUser {
			t.Fatalf("username %q read back as %q", user, got)
		}
		if got := oobe.all("FirstLogonCommands/SynchronousCommand")[1].find("CommandLine").Text; got != cmd {
			t.Fatalf("command %q read back as %q", cmd, got)
		}
		spec := root.pass(t, passSpecialize).component(t, "Microsoft-Windows-Shell-Setup")
		if got := spec.find("ComputerName").Text; got != computer && !(computer == "" && got == "*") {
			t.Fatalf("computer name %q read back as %q", computer, got)
		}
		// The plain-text encoding must round-trip as well.
		w.PasswordEncoding = PasswordPlainText
		out, err = RenderWindows(w)
		if err != nil {
			t.Fatal(err)
		}
		oobe = parseXML(t, out).pass(t, passOOBESystem).component(t, "Microsoft-Windows-Shell-Setup")
		if got := oobe.find("UserAccounts/AdministratorPassword/Value").Text; got != pw {
			t.Fatalf("plain-text password %q read back as %q", pw, got)
		}
	})
}

// FuzzDiscNames: a name Validate accepts is written and read back, in lower
// case, with its bytes; a name it rejects is never written.
func FuzzDiscNames(f *testing.F) {
	f.Add("user-data", []byte("#cloud-config\n"))
	f.Add("dir/Autounattend.xml", []byte("<x/>"))
	f.Add("a.b.c", []byte{})
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		d := Disc{Label: "cidata", Files: []File{{Name: name, Data: data}}}
		var buf bytes.Buffer
		if err := WriteISO(&buf, d); err != nil {
			if !IsValidation(err) {
				t.Fatalf("not a validation error for %q: %v", name, err)
			}
			return
		}
		back, err := ReadISO(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if len(back.Files) != 1 || back.Files[0].Name != lower(name) || !bytes.Equal(back.Files[0].Data, data) {
			t.Fatalf("wrote %q (%d bytes), read back %+v", name, len(data), back.Files)
		}
		// The joiner's reader finds a file of the root by its name, in any case.
		if !strings.Contains(name, "/") {
			got, err := ReadISOFile(bytes.NewReader(buf.Bytes()), strings.ToUpper(name), max(int64(len(data)), 64<<10))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("ReadISOFile(%q) of the disc written with it: %d bytes, %v", name, len(got), err)
			}
		}
	})
}

func lower(s string) string { return string(bytes.ToLower([]byte(s))) }
