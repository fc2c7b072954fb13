// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
)

// requireTools fails the test unless every binary is on PATH.
func requireTools(t testing.TB, install string, bins ...string) {
	t.Helper()
	for _, bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed: %s", bin, install)
		}
	}
}

// StartContainerd starts a containerd of the test's own (its root, state
// and socket under a temporary directory, the CRI plugin off; the host's
// containerd, if any, is not touched), stopped by PID when the test ends,
// and returns its socket. Needs root, containerd and ctr.
func StartContainerd(t testing.TB) string {
	t.Helper()
	requireTools(t, "install it with: apt-get install containerd", "containerd", "ctr")
	if os.Geteuid() != 0 {
		t.Fatal("this test starts containerd, which needs root: run it as root")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "containerd.sock")
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[ttrpc]
  address = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, sock+".ttrpc")), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting containerd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("containerd log:\n%s", b)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := exec.Command("ctr", "--address", sock, "version").Run()
		if err == nil {
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("containerd did not answer on %s: %v", sock, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ContainerDiskEntry is one file of a containerDisk image's filesystem.
type ContainerDiskEntry struct {
	Path     string // relative to the image's root: disk, disk/node.qcow2
	UID, GID int
	Mode     fs.FileMode
	Size     int64
}

// ContainerDisk is what ContainerDiskFromArchive found in an archive.
type ContainerDisk struct {
	Ref    string // the name containerd imported the image as
	Digest string // the manifest digest containerd lists
	// Disk is the image's disk/*.qcow2, copied into a temporary directory
	// of the test (mode 0600), `qemu-img check`ed.
	Disk string
	// Entries are every file and directory of the image, sorted by path.
	Entries []ContainerDiskEntry
}

const containerDiskNamespace = "kubenode-containerdisk-test"

// ContainerDiskFromArchive reads a KubeVirt containerDisk the way a node
// would: it imports the OCI archive into a containerd of its own
// (StartContainerd), mounts the image read-only, and fails the test
// unless the image holds exactly one disk/*.qcow2 owned by 107:107
// (KubeVirt's qemu user); it copies that disk out, checks it with
// `qemu-img check`, unmounts, and returns the copy with every entry it
// saw. Needs root, containerd, ctr and qemu-img.
func ContainerDiskFromArchive(t testing.TB, archive string) ContainerDisk {
	t.Helper()
	requireTools(t, "install it with: apt-get install qemu-utils", "qemu-img")
	sock := StartContainerd(t)
	ctr := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ctr", append([]string{"--address", sock, "-n", containerDiskNamespace}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	ctr("images", "import", archive)
	var cd ContainerDisk
	for _, line := range strings.Split(ctr("images", "ls"), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 3 {
			if cd.Ref != "" {
				t.Fatalf("%s holds more than one image: %s and %s", archive, cd.Ref, f[0])
			}
			cd.Ref, cd.Digest = f[0], f[2]
		}
	}
	if cd.Ref == "" {
		t.Fatalf("containerd lists no image after importing %s: does its index name one (io.containerd.image.name)?", archive)
	}
	t.Cleanup(func() {
		_ = exec.Command("ctr", "--address", sock, "-n", containerDiskNamespace, "images", "rm", "--sync", cd.Ref).Run()
		_ = exec.Command("ctr", "--address", sock, "namespaces", "rm", containerDiskNamespace).Run()
	})

	mnt := t.TempDir()
	ctr("images", "mount", cd.Ref, mnt)
	defer func() {
		if out, err := exec.Command("ctr", "--address", sock, "-n", containerDiskNamespace, "images", "unmount", "--rm", mnt).CombinedOutput(); err != nil {
			t.Errorf("ctr images unmount %s: %v\n%s", mnt, err, out)
		}
	}()
	var disks []ContainerDiskEntry
	err := filepath.WalkDir(mnt, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == mnt {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		rel, _ := filepath.Rel(mnt, path)
		e := ContainerDiskEntry{Path: filepath.ToSlash(rel), UID: int(st.Uid), GID: int(st.Gid), Mode: fi.Mode(), Size: fi.Size()}
		cd.Entries = append(cd.Entries, e)
		if filepath.Dir(e.Path) == "disk" && strings.HasSuffix(e.Path, ".qcow2") && fi.Mode().IsRegular() {
			disks = append(disks, e)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the mounted image: %v", err)
	}
	if len(disks) != 1 {
		t.Fatalf("%s: want exactly one disk/*.qcow2, found %+v", cd.Ref, cd.Entries)
	}
	if disks[0].UID != 107 || disks[0].GID != 107 {
		t.Fatalf("%s: %s is owned by %d:%d, want 107:107 (KubeVirt's qemu user)", cd.Ref, disks[0].Path, disks[0].UID, disks[0].GID)
	}
	cd.Disk = filepath.Join(t.TempDir(), filepath.Base(disks[0].Path))
	if err := safefile.Copy(filepath.Join(mnt, disks[0].Path), cd.Disk, 0o600); err != nil {
		t.Fatalf("copying %s out of the image: %v", disks[0].Path, err)
	}
	if out, err := exec.Command("qemu-img", "check", cd.Disk).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img check %s (from %s): %v\n%s", cd.Disk, cd.Ref, err, out)
	}
	return cd
}
