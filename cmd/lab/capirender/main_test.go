// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/worker-user-data.golden from the current rendering")

const (
	golden       = "testdata/worker-user-data.golden"
	goldenToken  = "abcdef.0123456789abcdef"
	goldenHash   = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	goldenKey    = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGoldenKeyForTestsOnlyNotARealKey0000000000 lab@kubenode"
	goldenFile   = "/etc/kubenode/lab-marker"
	goldenLocal  = "testdata/lab-marker"
	joinConfig   = "/run/kubeadm/kubeadm-join-config.yaml"
	joinCommand  = "kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml"
	sentinel     = "echo success > /run/cluster-api/bootstrap-success.complete"
	endpoint     = "10.0.2.2:6443"
	k8sVersion   = "v1.33.13"
	nodeNameWant = "{{ ds.meta_data.local_hostname }}"
)

// goldenTokenFile holds goldenToken, with the newline an editor adds.
const goldenTokenFile = "testdata/token"

// goldenArgs are the fixed inputs of the golden file.
func goldenArgs() []string {
	return []string{
		"--kubernetes-version", k8sVersion,
		"--api-server-endpoint", endpoint,
		"--token-file", goldenTokenFile,
		"--ca-cert-hash", goldenHash,
		"--ssh-user", "kubenode",
		"--ssh-user-sudo", "ALL=(ALL) NOPASSWD:ALL",
		"--ssh-authorized-key", goldenKey,
		"--file", goldenFile + "=" + goldenLocal,
	}
}

func render(t *testing.T, args []string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(args, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("run %q: %v (stderr: %s)", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// TestGolden: the user data for fixed inputs is byte for byte the golden
// file, so a Cluster API bump shows in the diff what changed. `go test
// -run TestGolden -update` rewrites it.
func TestGolden(t *testing.T) {
	got := render(t, goldenArgs())
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", golden)
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestGolden -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		line := 0
		for line < len(g) && line < len(w) && g[line] == w[line] {
			line++
		}
		at := func(l []string) string {
			if line < len(l) {
				return l[line]
			}
			return "(end)"
		}
		t.Errorf("the rendering differs from %s from line %d on: got %q, want %q (if Cluster API changed it, rerun with -update and review the diff):\n%s", golden, line+1, at(g), at(w), got)
	}
}

// The cloud-config and the JoinConfiguration it writes, as far as the
// tests look at them.
type cloudConfig struct {
	WriteFiles []struct {
		Path        string `json:"path"`
		Owner       string `json:"owner"`
		Permissions string `json:"permissions"`
		Content     string `json:"content"`
	} `json:"write_files"`
	RunCmd []string `json:"runcmd"`
	Users  []struct {
		Name              string   `json:"name"`
		SSHAuthorizedKeys []string `json:"ssh_authorized_keys"`
		Sudo              string   `json:"sudo"`
	} `json:"users"`
}

type joinConfiguration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Discovery  struct {
		BootstrapToken struct {
			APIServerEndpoint        string   `json:"apiServerEndpoint"`
			Token                    string   `json:"token"`
			CACertHashes             []string `json:"caCertHashes"`
			UnsafeSkipCAVerification *bool    `json:"unsafeSkipCAVerification"`
		} `json:"bootstrapToken"`
	} `json:"discovery"`
	NodeRegistration struct {
		Name   string `json:"name"`
		Taints []struct {
			Key    string `json:"key"`
			Value  string `json:"value"`
			Effect string `json:"effect"`
		} `json:"taints"`
	} `json:"nodeRegistration"`
}

// TestStructure reads the rendering back as cloud-init and kubeadm would.
func TestStructure(t *testing.T) {
	out := render(t, goldenArgs())
	lines := strings.SplitN(string(out), "\n", 3)
	if len(lines) < 3 || lines[0] != "## template: jinja" || lines[1] != "#cloud-config" {
		t.Fatalf("the first lines are not `## template: jinja` and `#cloud-config`:\n%s", out)
	}
	var cc cloudConfig
	// Strict: no key twice, and none the test does not know.
	if err := yaml.UnmarshalStrict(out, &cc); err != nil {
		t.Fatalf("not YAML, or not the keys expected: %v\n%s", err, out)
	}

	files := map[string]int{}
	for i, f := range cc.WriteFiles {
		files[f.Path] = i
	}
	i, ok := files[joinConfig]
	if !ok {
		t.Fatalf("write_files has no %s: %+v", joinConfig, cc.WriteFiles)
	}
	var jc joinConfiguration
	if err := yaml.Unmarshal([]byte(cc.WriteFiles[i].Content), &jc); err != nil {
		t.Fatalf("%s is not YAML: %v\n%s", joinConfig, err, cc.WriteFiles[i].Content)
	}
	if jc.Kind != "JoinConfiguration" || jc.APIVersion != "kubeadm.k8s.io/v1beta4" {
		t.Errorf("%s is a %s %s, want a kubeadm.k8s.io/v1beta4 JoinConfiguration (Kubernetes %s)", joinConfig, jc.APIVersion, jc.Kind, k8sVersion)
	}
	bt := jc.Discovery.BootstrapToken
	if bt.APIServerEndpoint != endpoint || bt.Token != goldenToken || !slices.Equal(bt.CACertHashes, []string{goldenHash}) || bt.UnsafeSkipCAVerification != nil {
		t.Errorf("bootstrap-token discovery is %+v, want endpoint %s, token %s, CA hashes [%s]", bt, endpoint, goldenToken, goldenHash)
	}
	if jc.NodeRegistration.Name != nodeNameWant {
		t.Errorf("nodeRegistration.name is %q, want %q", jc.NodeRegistration.Name, nodeNameWant)
	}
	taints := jc.NodeRegistration.Taints
	if len(taints) != 1 || taints[0].Key != "node.cluster.x-k8s.io/uninitialized" || taints[0].Value != "" || taints[0].Effect != "NoSchedule" {
		t.Errorf("nodeRegistration.taints are %+v, want only node.cluster.x-k8s.io/uninitialized:NoSchedule", taints)
	}

	i, ok = files[goldenFile]
	if !ok {
		t.Fatalf("write_files has no %s (--file): %+v", goldenFile, cc.WriteFiles)
	}
	local, err := os.ReadFile(goldenLocal)
	if err != nil {
		t.Fatal(err)
	}
	if f := cc.WriteFiles[i]; f.Owner != "root:root" || f.Permissions != "0644" || strings.TrimRight(f.Content, "\n") != strings.TrimRight(string(local), "\n") {
		t.Errorf("%s is %+v, want root:root 0644 with %s's content %q", goldenFile, f, goldenLocal, local)
	}

	joined := slices.ContainsFunc(cc.RunCmd, func(c string) bool {
		return strings.Contains(c, joinCommand) && strings.Contains(c, sentinel) && strings.Index(c, joinCommand) < strings.Index(c, "&& "+sentinel)
	})
	if !joined {
		t.Errorf("runcmd has no `%s ... && %s`: %q", joinCommand, sentinel, cc.RunCmd)
	}

	if len(cc.Users) != 1 || cc.Users[0].Name != "kubenode" || !slices.Equal(cc.Users[0].SSHAuthorizedKeys, []string{goldenKey}) || cc.Users[0].Sudo != "ALL=(ALL) NOPASSWD:ALL" {
		t.Errorf("users are %+v, want kubenode with the key and its sudo rule", cc.Users)
	}
}

// Without --ssh-user and --file the user data has no users and only
// Cluster API's own files; several CA hashes are all kept.
func TestMinimal(t *testing.T) {
	second := "sha256:" + strings.Repeat("f", 64)
	out := render(t, []string{"--kubernetes-version", "1.33.13", "--api-server-endpoint", endpoint, "--token-file", goldenTokenFile, "--ca-cert-hash", goldenHash, "--ca-cert-hash", second})
	var cc cloudConfig
	if err := yaml.Unmarshal(out, &cc); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, out)
	}
	var paths []string
	for _, f := range cc.WriteFiles {
		paths = append(paths, f.Path)
	}
	if want := []string{joinConfig, "/run/cluster-api/placeholder"}; !slices.Equal(paths, want) {
		t.Errorf("write_files paths are %q, want %q", paths, want)
	}
	if len(cc.Users) != 0 {
		t.Errorf("users: %+v, want none", cc.Users)
	}
	if !strings.Contains(string(out), "- "+goldenHash+"\n") || !strings.Contains(string(out), "- "+second+"\n") {
		t.Errorf("both CA hashes should be in the JoinConfiguration:\n%s", out)
	}
}

// The Machine's Kubernetes version picks the kubeadm API version, as in the
// controller: v1beta3 before Kubernetes 1.31, v1beta4 from it.
func TestKubeadmAPIVersion(t *testing.T) {
	for version, want := range map[string]string{"v1.30.14": "kubeadm.k8s.io/v1beta3", "v1.31.0": "kubeadm.k8s.io/v1beta4", k8sVersion: "kubeadm.k8s.io/v1beta4"} {
		out := render(t, []string{"--kubernetes-version", version, "--api-server-endpoint", endpoint, "--token-file", goldenTokenFile, "--ca-cert-hash", goldenHash})
		if !strings.Contains(string(out), "\n      apiVersion: "+want+"\n") {
			t.Errorf("Kubernetes %s: the JoinConfiguration is not %s:\n%s", version, want, out)
		}
	}
}

// --output writes the same bytes to a file only its owner reads.
func TestOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "user-data")
	var stdout, stderr bytes.Buffer
	if err := run(append(goldenArgs(), "--output", path), strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout should be empty with --output: %q", stdout.String())
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := render(t, goldenArgs()); !bytes.Equal(got, want) {
		t.Errorf("--output's file differs from stdout's rendering")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("--output's file: %v, mode %v, want 0600", err, fi.Mode().Perm())
	}
}

// The token comes from a file or stdin, never the command line, where
// every local user sees it (ps); an error never shows it.
func TestTokenFromFileOrStdin(t *testing.T) {
	want := render(t, goldenArgs())
	args := slices.Clone(goldenArgs())
	i := slices.Index(args, goldenTokenFile)
	args[i] = "-"
	var stdout, stderr bytes.Buffer
	if err := run(args, strings.NewReader(goldenToken+"\n"), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stdout.Bytes(), want) {
		t.Errorf("--token-file - renders other user data than --token-file %s", goldenTokenFile)
	}
	stdout.Reset()
	err := run(args, strings.NewReader("abcdef.0123456789ABCDEF"), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--token-file -: not a bootstrap token") || strings.Contains(err.Error(), "0123456789") {
		t.Errorf("a bad token on stdin: %v", err)
	}
	err = run(append(goldenArgs(), "--token", goldenToken), strings.NewReader(""), &stdout, &stderr)
	if err == nil || strings.Contains(err.Error(), "0123456789") {
		t.Errorf("a token on the command line: %v", err)
	}
}

// Every missing or wrong flag is an error that names it.
func TestFlagErrors(t *testing.T) {
	without := func(flag string) []string {
		var out []string
		args := goldenArgs()
		for i := 0; i < len(args); i += 2 {
			if args[i] != flag {
				out = append(out, args[i], args[i+1])
			}
		}
		return out
	}
	with := func(flag, value string) []string {
		args := without(flag)
		return append(args, flag, value)
	}
	cases := map[string]struct {
		args []string
		flag string
	}{
		"no kubernetes version":     {without("--kubernetes-version"), "--kubernetes-version"},
		"no endpoint":               {without("--api-server-endpoint"), "--api-server-endpoint"},
		"no token":                  {without("--token-file"), "--token-file"},
		"no CA hash":                {without("--ca-cert-hash"), "--ca-cert-hash"},
		"no key for the user":       {without("--ssh-authorized-key"), "--ssh-authorized-key"},
		"no user for the key":       {without("--ssh-user"), "--ssh-user"},
		"bad version":               {with("--kubernetes-version", "one.thirty"), "--kubernetes-version"},
		"too old a version":         {with("--kubernetes-version", "v1.12.0"), "--kubernetes-version"},
		"endpoint without port":     {with("--api-server-endpoint", "10.0.2.2"), "--api-server-endpoint"},
		"endpoint without host":     {with("--api-server-endpoint", ":6443"), "--api-server-endpoint"},
		"endpoint bad port":         {with("--api-server-endpoint", "10.0.2.2:http"), "--api-server-endpoint"},
		"bad token":                 {with("--token-file", "testdata/lab-marker"), "--token-file"},
		"no token file":             {with("--token-file", "testdata/no-such-file"), "--token-file"},
		"token on the command line": {append(goldenArgs(), "--token", goldenToken), "--token-file"},
		"hash without sha256":       {with("--ca-cert-hash", strings.Repeat("a", 64)), "--ca-cert-hash"},
		"short hash":                {with("--ca-cert-hash", "sha256:abcd"), "--ca-cert-hash"},
		"file without =":            {with("--file", "/etc/x"), "--file"},
		"file without guest":        {with("--file", "="+goldenLocal), "--file"},
		"file missing locally":      {with("--file", "/etc/x=testdata/no-such-file"), "--file"},
		"file given twice":          {append(goldenArgs(), "--file", goldenFile+"="+goldenLocal), "--file"},
		"output in no directory":    {append(goldenArgs(), "--output", filepath.Join(t.TempDir(), "no", "such", "dir")), "--output"},
		"unknown flag":              {append(goldenArgs(), "--no-such-flag"), "-no-such-flag"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(c.args, strings.NewReader(""), &stdout, &stderr)
			if err == nil {
				t.Fatalf("run %q succeeded:\n%s", c.args, stdout.String())
			}
			if !strings.Contains(err.Error(), c.flag) {
				t.Errorf("the error %q does not name %s", err, c.flag)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout should be empty on an error: %q", stdout.String())
			}
		})
	}
}
