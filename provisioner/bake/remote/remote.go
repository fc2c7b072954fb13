// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package remote is the bake's connection to the guest, which both
// operating systems' steps run through: commands run and files uploaded
// over the communicator Packer hands the provisioner (SSH or WinRM).
package remote

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// Remote runs the bake's commands and uploads through the communicator.
// On Windows commands start with powershell.exe, so they work whether the
// communicator's shell is cmd.exe (WinRM) or PowerShell (OpenSSH).
type Remote struct {
	Comm packersdk.Communicator
	UI   packersdk.Ui
	// Sudo prefixes Linux commands when the communicator's user is not root.
	Sudo string
}

// Run runs command, showing its output in the UI. A non-zero exit is a
// *StepError naming the step, with the command, its exit code and the tail
// of its output, also shown with ui.Error.
func (r *Remote) Run(ctx context.Context, step, command string) (string, error) {
	tail := NewLineTail()
	cmd := &packersdk.RemoteCmd{Command: command, Stdout: tail, Stderr: tail}
	if err := cmd.RunWithUi(ctx, r.Comm, r.UI); err != nil {
		err = fmt.Errorf("step %s: starting `%s`: %w", step, command, err)
		r.UI.Error(err.Error())
		return "", err
	}
	if code := cmd.ExitStatus(); code != 0 {
		err := &StepError{Step: step, Command: command, ExitCode: code, Tail: tail.String()}
		r.UI.Error(err.Error())
		return tail.All(), err
	}
	return tail.All(), nil
}

// Exec runs command quietly and returns its exit code and output; ctx
// bounds the whole command, also a Start that hangs on a dead connection.
func (r *Remote) Exec(ctx context.Context, command string) (int, string, error) {
	out := NewLineTail()
	cmd := &packersdk.RemoteCmd{Command: command, Stdout: out, Stderr: out}
	started := make(chan error, 1)
	go func() { started <- r.Comm.Start(ctx, cmd) }()
	select {
	case err := <-started:
		if err != nil {
			return -1, "", err
		}
	case <-ctx.Done():
		return -1, "", ctx.Err()
	}
	exited := make(chan int, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case code := <-exited:
		return code, out.All(), nil
	case <-ctx.Done():
		return -1, out.All(), ctx.Err()
	}
}

// UploadPath writes a guest path with forward slashes: the SSH
// communicator splits the destination with the build machine's path rules,
// and Windows (WinRM, OpenSSH) takes either slash.
func UploadPath(p string) string { return strings.ReplaceAll(p, `\`, "/") }

// Upload copies a local file to the guest.
func (r *Remote) Upload(local, remote string) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return r.Comm.Upload(UploadPath(remote), f, &fi)
}

// StepError is a remote step that failed.
type StepError struct {
	Step     string
	Command  string
	ExitCode int
	Tail     string
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %s: `%s` exited with code %d; last lines of its output:\n%s", e.Step, e.Command, e.ExitCode, e.Tail)
}

// NewLineTail keeps the end of a command's output and shows its last 25
// lines.
func NewLineTail() *LineTail { return &LineTail{max: 25} }

// maxOutput bounds the output a LineTail keeps: its last maxOutput bytes,
// from a line's start. A guest that prints without end cannot exhaust
// Packer's memory; the steps' output the bake reads is far shorter.
const maxOutput = 1 << 20

// LineTail keeps the last maxOutput bytes of output and shows its last
// max lines.
type LineTail struct {
	mu          sync.Mutex
	max         int
	buf         bytes.Buffer
	dropped     int  // bytes dropped from the start
	lastDropped byte // the last of them
}

func (t *LineTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) > maxOutput {
		t.drop(t.buf.Len())
		t.dropped += len(p) - maxOutput
		t.lastDropped = p[len(p)-maxOutput-1]
		p = p[len(p)-maxOutput:]
	}
	t.buf.Write(p)
	if over := t.buf.Len() - maxOutput; over > 0 {
		t.drop(over)
	}
	// A line cut at the start goes too, unless it is the only one.
	if t.dropped > 0 && t.lastDropped != '\n' {
		if i := bytes.IndexByte(t.buf.Bytes(), '\n'); i >= 0 && i+1 < t.buf.Len() {
			t.drop(i + 1)
		}
	}
	return n, nil
}

// drop drops the first n bytes kept.
func (t *LineTail) drop(n int) {
	if n == 0 {
		return
	}
	t.lastDropped = t.buf.Bytes()[n-1]
	t.dropped += n
	t.buf.Next(n)
}

// All is the output kept, after a line saying how much was dropped from
// its start, if any.
func (t *LineTail) All() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped > 0 {
		return fmt.Sprintf("[kubenode-bake: the first %d bytes of this output were dropped: only the last %d are kept]\n", t.dropped, maxOutput) + t.buf.String()
	}
	return t.buf.String()
}

func (t *LineTail) String() string {
	lines := strings.Split(strings.TrimRight(t.All(), "\n"), "\n")
	if len(lines) > t.max {
		lines = lines[len(lines)-t.max:]
	}
	return "  " + strings.Join(lines, "\n  ")
}
