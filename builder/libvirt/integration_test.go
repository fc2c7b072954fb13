// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package libvirt_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
)

// packerRun is one `packer build` of testdata/debian.pkr.hcl.
type packerRun struct {
	t      *testing.T
	vmName string
	outDir string
	tmpDir string
	// cacheDir is the build's PACKER_CACHE_DIR.
	cacheDir string
	cmd      *exec.Cmd
	output   bytes.Buffer
	lines    chan string
	done     chan error
}

func startBuild(t *testing.T, plugins, baseDisk, vmName string, inline ...string) *packerRun {
	t.Helper()
	inlineHCL := `["` + strings.Join(inline, `", "`) + `"]`
	return startPacker(t, plugins, "debian.pkr.hcl", vmName, func(r *packerRun) []string {
		return []string{"base_disk=" + baseDisk, "vm_name=" + vmName, "output_directory=" + r.outDir,
			"inline=" + inlineHCL}
	})
}

// startPacker runs `packer build` of a template under testdata/ with the
// variables vars returns (name=value), in a work directory of its own.
// vmName is what the build's domains, pools and files are named after.
func startPacker(t *testing.T, plugins, template, vmName string, vars func(*packerRun) []string) *packerRun {
	t.Helper()
	work := t.TempDir()
	r := &packerRun{t: t, vmName: vmName, outDir: filepath.Join(work, "output"), tmpDir: filepath.Join(work, "tmp"),
		lines: make(chan string, 1000), done: make(chan error, 1)}
	require.NoError(t, os.Mkdir(r.tmpDir, 0o755))
	args := []string{"build", "-color=false"}
	for _, v := range vars(r) {
		args = append(args, "-var", v)
	}
	args = append(args, filepath.Join(harness.Root(), "builder", "libvirt", "testdata", template))
	r.cmd = exec.Command(harness.Packer(t), args...)
	r.cmd.Dir = work
	r.cacheDir = filepath.Join(work, "packer_cache")
	r.cmd.Env = append(os.Environ(), "PACKER_PLUGIN_PATH="+plugins, "PACKER_CHECKPOINT_DISABLE=1", "TMPDIR="+r.tmpDir,
		"PACKER_CACHE_DIR="+r.cacheDir)
	stdout, err := r.cmd.StdoutPipe()
	require.NoError(t, err)
	r.cmd.Stderr = r.cmd.Stdout
	// Its own process group, so that interrupt reaches packer, its
	// panicwrap child and the plugin, as Ctrl-C in a terminal does.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, r.cmd.Start())
	go func() {
		sc := bufio.NewScanner(io.TeeReader(stdout, &r.output))
		for sc.Scan() {
			select {
			case r.lines <- sc.Text():
			default:
			}
		}
		close(r.lines)
		r.done <- r.cmd.Wait()
	}()
	return r
}

// waitFor returns when a line containing s is printed.
func (r *packerRun) waitFor(s string, timeout time.Duration) {
	r.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("packer ended before printing %q:\n%s", s, r.output.String())
			}
			if strings.Contains(line, s) {
				return
			}
		case <-deadline:
			r.t.Fatalf("packer did not print %q within %s:\n%s", s, timeout, r.output.String())
		}
	}
}

func (r *packerRun) wait(timeout time.Duration) error {
	r.t.Helper()
	go func() {
		for range r.lines {
		}
	}()
	select {
	case err := <-r.done:
		return err
	case <-time.After(timeout):
		// Interrupt first so the builder still cleans up; kill if it hangs.
		r.interrupt()
		select {
		case <-r.done:
		case <-time.After(2 * time.Minute):
			syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		}
		r.t.Fatalf("packer did not finish within %s:\n%s", timeout, r.output.String())
		return nil
	}
}

// interrupt sends SIGINT to packer's process group, like Ctrl-C.
func (r *packerRun) interrupt() {
	r.t.Helper()
	require.NoError(r.t, syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT))
}

func virsh(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("virsh", append([]string{"-c", "qemu:///system"}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			names = append(names, l)
		}
	}
	return names
}

// assertNothingLeft checks that no domain, pool, pool directory, volume or
// temporary file of the build is left.
func (r *packerRun) assertNothingLeft() {
	t := r.t
	t.Helper()
	for _, d := range virsh(t, "list", "--all", "--name") {
		assert.NotContains(t, d, r.vmName, "domain left behind")
	}
	for _, p := range virsh(t, "pool-list", "--all", "--name") {
		assert.NotContains(t, p, r.vmName, "storage pool left behind")
	}
	entries, _ := os.ReadDir("/var/lib/libvirt/images")
	for _, e := range entries {
		assert.NotContains(t, e.Name(), r.vmName, "pool directory left behind")
	}
	tmp, err := os.ReadDir(r.tmpDir)
	require.NoError(t, err)
	var left []string
	for _, e := range tmp {
		left = append(left, e.Name())
	}
	assert.Empty(t, left, "temporary files left in TMPDIR")
	_, err = os.Stat(r.outDir)
	assert.True(t, os.IsNotExist(err), "output directory left after a failed build")
}

// TestInterruptLeavesNothing sends SIGINT to packer at several steps and
// checks that libvirt, the pool directory, TMPDIR and the output directory
// hold nothing of the build afterwards.
func TestInterruptLeavesNothing(t *testing.T) {
	harness.Libvirtd(t)
	base := harness.BaseDisk(t)
	plugins := harness.PluginDir(t)
	for i, at := range []struct {
		name   string
		marker string
	}{
		{"while uploading", "Uploading"},
		{"while waiting for ssh", "Waiting for the guest's SSH server"},
		{"while provisioning", "kubenode-provisioning"},
	} {
		t.Run(at.name, func(t *testing.T) {
			vm := fmt.Sprintf("kn-it-int%d", i)
			r := startBuild(t, plugins, base, vm, "echo kubenode-provisioning", "sleep 300")
			r.waitFor(at.marker, 10*time.Minute)
			if at.marker == "kubenode-provisioning" {
				assertGuestAgentAddress(t, vm)
			}
			r.interrupt()
			err := r.wait(3 * time.Minute)
			assert.Error(t, err, "an interrupted build must fail")
			r.assertNothingLeft()
		})
	}
}

// assertGuestAgentAddress asks libvirt for the running build VM's address:
// on user networking there is no lease or ARP entry, so it must come from
// the guest agent (qemu-guest-agent in the base disk, over the channel the
// domain XML defines), and it is QEMU's user-network guest address.
func assertGuestAgentAddress(t *testing.T, vm string) {
	t.Helper()
	d, err := libvirt.NewDriver("qemu:///system")
	require.NoError(t, err)
	defer d.Close()
	var addr string
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if addr, err = d.GuestAddress(vm); err == nil {
			break
		}
		time.Sleep(2 * time.Second)
	}
	require.NoError(t, err, "no address from the guest agent within 90 s")
	assert.Equal(t, "10.0.2.15", addr)
}
