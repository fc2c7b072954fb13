// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package bench

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
)

// peerInline is the one shell provisioner both peer builds run.
var peerInline = []string{"echo kubenode-bench-provisioned | tee /tmp/x", "sync"}

// peerMarkers are the lines that split a peer build's wall time: start ->
// SSH connected -> provisioned and shut down (the first line of the step
// after the shutdown) -> packer done (image finished).
type peerMarkers struct{ ssh, finishing string }

// BenchmarkPeerBuild builds the same Debian guest with
// hashicorp/packer-plugin-qemu v1.0.9 and with kubenode-libvirt +
// kubenode-export, one after the other, with the pinned packer: the Debian
// base disk (scripts/base-disk.sh) booted under TCG with 2 vCPUs and
// 1 GiB, a NoCloud seed, SSH, one shell provisioner, shutdown_command,
// then a compressed qcow2 (qemu: disk_compression = true, that is
// `qemu-img convert -c`, zlib; kubenode: kubenode-export, zstd).
//
// Reported per build: ns/op (wall time of `packer build`), ssh-s (start to
// "Connected to SSH!"), provision-s (from there to the step after the
// shutdown), finish-s (the rest: the image's conversion and compression)
// and bytes (the output image). Run with -benchtime 1x: each build takes
// minutes. KUBENODE_BENCH_QEMU_BACKING_FILE=1 also runs the qemu build with
// use_backing_file = true; KUBENODE_BENCH_PEER_LOGDIR=dir keeps each
// build's packer output there, every line prefixed with the seconds since
// the build started.
func BenchmarkPeerBuild(b *testing.B) {
	harness.Libvirtd(b)
	base := harness.BaseDisk(b)
	packer := harness.Packer(b)
	plugins := harness.PluginDir(b)
	qemuPlugin := peerSetup(b, "packer-plugin-qemu")
	install := exec.Command(packer, "plugins", "install", "--path", qemuPlugin, "github.com/hashicorp/qemu")
	install.Env = append(os.Environ(), "PACKER_PLUGIN_PATH="+plugins, "PACKER_CHECKPOINT_DISABLE=1")
	if out, err := install.CombinedOutput(); err != nil {
		b.Fatalf("packer plugins install github.com/hashicorp/qemu: %v\n%s", err, out)
	}
	sum, err := filehash.SHA256(base)
	if err != nil {
		b.Fatal(err)
	}
	inline := `["` + strings.Join(peerInline, `", "`) + `"]`

	qemu := func(backing bool) func(b *testing.B) {
		return func(b *testing.B) {
			work := b.TempDir()
			key, pub := peerKeyPair(b, work)
			seed := peerSeed(b, work, pub)
			peerBuild(b, packer, plugins, work, "peer-qemu.pkr.hcl", "peer-qemu.qcow2",
				peerMarkers{ssh: "Connected to SSH!", finishing: "Converting hard drive..."},
				"-var", "base_disk_url=file://"+base, "-var", "base_disk_checksum=sha256:"+sum,
				"-var", "seed_files="+seed, "-var", "ssh_private_key_file="+key,
				"-var", "vm_name=peer-qemu.qcow2", "-var", "inline="+inline,
				"-var", "use_backing_file="+strconv.FormatBool(backing))
		}
	}
	b.Run("qemu", qemu(false))
	if os.Getenv("KUBENODE_BENCH_QEMU_BACKING_FILE") == "1" {
		b.Run("qemu_backing_file", qemu(true))
	}
	b.Run("kubenode", func(b *testing.B) {
		work := b.TempDir()
		peerBuild(b, packer, plugins, work, "peer-kubenode.pkr.hcl", "kn-bench-peer.qcow2",
			peerMarkers{ssh: "Connected to SSH!", finishing: "Flattening the build disk"},
			"-var", "base_disk="+base, "-var", "vm_name=kn-bench-peer", "-var", "inline="+inline)
	})
}

// peerBuild runs `packer build` of bench/testdata/<template> b.N times
// (each into a fresh output directory under work) and reports the last
// run's figures. It fails the benchmark when a build fails, and removes
// whatever a build left (QEMU processes, libvirt domains and pools) even
// then.
func peerBuild(b *testing.B, packer, plugins, work, template, image string, m peerMarkers, vars ...string) {
	b.Helper()
	b.Cleanup(func() { peerSweep(b, work) })
	var ssh, finishing, total time.Duration
	var size int64
	b.StopTimer()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run := filepath.Join(work, fmt.Sprintf("run%d", i))
		out := filepath.Join(run, "output")
		tmp := filepath.Join(run, "tmp")
		cache := filepath.Join(run, "packer_cache")
		for _, d := range []string{tmp, cache} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		args := append([]string{"build", "-color=false", "-var", "output_directory=" + out}, vars...)
		cmd := exec.Command(packer, append(args, filepath.Join(harness.Root(), "bench", "testdata", template))...)
		cmd.Dir = run
		cmd.Env = append(os.Environ(), "PACKER_PLUGIN_PATH="+plugins, "PACKER_CHECKPOINT_DISABLE=1",
			"PACKER_CACHE_DIR="+cache, "TMPDIR="+tmp)
		// Its own process group: an interrupt reaches packer, its plugins
		// and QEMU, as Ctrl-C in a terminal does.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stderr = cmd.Stdout
		var log bytes.Buffer
		var mu sync.Mutex
		var timed io.Writer = io.Discard
		if dir := os.Getenv("KUBENODE_BENCH_PEER_LOGDIR"); dir != "" {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.log", strings.ReplaceAll(b.Name(), "/", "_"), i)))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			timed = f
		}
		ssh, finishing = 0, 0
		b.StartTimer()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		scanned := make(chan struct{})
		go func() {
			defer close(scanned)
			sc := bufio.NewScanner(io.TeeReader(pipe, &log))
			for sc.Scan() {
				line := sc.Text()
				fmt.Fprintf(timed, "%7.1f %s\n", time.Since(start).Seconds(), line)
				mu.Lock()
				if ssh == 0 && strings.Contains(line, m.ssh) {
					ssh = time.Since(start)
				}
				if finishing == 0 && strings.Contains(line, m.finishing) {
					finishing = time.Since(start)
				}
				mu.Unlock()
			}
			io.Copy(io.Discard, pipe)
		}()
		done := make(chan error, 1)
		go func() { <-scanned; done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(25 * time.Minute):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			err = fmt.Errorf("packer did not finish within 25 minutes")
		}
		total = time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatalf("packer build %s: %v\n%s", template, err, lastLines(log.String(), 80))
		}
		if !strings.Contains(log.String(), "kubenode-bench-provisioned") {
			b.Fatalf("packer build %s: the provisioner's output is missing\n%s", template, lastLines(log.String(), 80))
		}
		info, err := exec.Command("qemu-img", "info", filepath.Join(out, image)).CombinedOutput()
		if err != nil {
			b.Fatalf("qemu-img info %s: %v\n%s\npacker:\n%s", image, err, info, lastLines(log.String(), 80))
		}
		if !strings.Contains(string(info), "file format: qcow2") || strings.Contains(string(info), "backing file:") {
			b.Fatalf("%s is not a standalone qcow2:\n%s", image, info)
		}
		st, err := os.Stat(filepath.Join(out, image))
		if err != nil {
			b.Fatal(err)
		}
		size = st.Size()
		if ssh == 0 || finishing == 0 {
			b.Fatalf("packer build %s: no %q or %q line\n%s", template, m.ssh, m.finishing, lastLines(log.String(), 80))
		}
		// Each run's output goes before the next one starts.
		if err := os.RemoveAll(run); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size), "bytes")
	b.ReportMetric(ssh.Seconds(), "ssh-s")
	b.ReportMetric((finishing - ssh).Seconds(), "provision-s")
	b.ReportMetric((total - finishing).Seconds(), "finish-s")
}

// peerSweep stops any QEMU started for a build under work and removes any
// libvirt domain or pool named after the kubenode build, failing the
// benchmark if it had to: a build must leave none behind.
func peerSweep(b *testing.B, work string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(cmdline, []byte("qemu-system")) {
			continue
		}
		if bytes.Contains(cmdline, []byte(work)) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			syscall.Kill(pid, syscall.SIGKILL)
			b.Errorf("a QEMU of the build was left running (pid %d): killed", pid)
		}
	}
	virsh := func(args ...string) []string {
		out, _ := exec.Command("virsh", append([]string{"-c", "qemu:///system"}, args...)...).Output()
		return strings.Fields(string(out))
	}
	for _, d := range virsh("list", "--all", "--name") {
		if strings.Contains(d, "kn-bench-peer") {
			virsh("destroy", d)
			virsh("undefine", d, "--nvram")
			b.Errorf("libvirt domain %s was left: removed", d)
		}
	}
	for _, p := range virsh("pool-list", "--all", "--name") {
		if strings.Contains(p, "kn-bench-peer") {
			virsh("pool-destroy", p)
			virsh("pool-delete", p)
			virsh("pool-undefine", p)
			b.Errorf("libvirt pool %s was left: removed", p)
		}
	}
}

// peerSetup runs scripts/setup.sh with arg and returns what it prints.
func peerSetup(b *testing.B, arg string) string {
	b.Helper()
	cmd := exec.Command("bash", filepath.Join(harness.Root(), "scripts", "setup.sh"), arg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("scripts/setup.sh %s: %v\n%s", arg, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// peerKeyPair writes an ed25519 key for the qemu build's SSH connection and
// returns the private key's path and the public key (authorized_keys line).
func peerKeyPair(b *testing.B, dir string) (string, string) {
	b.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "kubenode-bench")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		b.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		b.Fatal(err)
	}
	return path, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
}

// peerSeed writes the qemu build's NoCloud user-data and meta-data with the
// renderer kubenode-libvirt uses for linux { flavor = "cloud-init" }, so
// both guests get the same cloud-config, and returns them as an HCL list.
func peerSeed(b *testing.B, dir, pub string) string {
	b.Helper()
	files, err := autounattend.RenderLinux(autounattend.Linux{
		Flavor: autounattend.FlavorCloudInit, Hostname: "kubenode-bench", Username: "kubenode",
		SSHAuthorizedKeys: []string{pub},
	})
	if err != nil {
		b.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, "seed", f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, strconv.Quote(p))
	}
	return "[" + strings.Join(paths, ", ") + "]"
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
