package bake

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// remote runs the bake's commands and uploads through the communicator.
// On Windows commands start with powershell.exe, so they work whether the
// communicator's shell is cmd.exe (WinRM) or PowerShell (OpenSSH).
type remote struct {
	comm packersdk.Communicator
	ui   packersdk.Ui
	// sudo prefixes Linux commands when the communicator's user is not root.
	sudo string
}

// run runs command, showing its output in the UI. A non-zero exit is a
// *StepError naming the step, with the command, its exit code and the tail
// of its output, also shown with ui.Error.
func (r *remote) run(ctx context.Context, step, command string) (string, error) {
	tail := &lineTail{max: 25}
	cmd := &packersdk.RemoteCmd{Command: command, Stdout: tail, Stderr: tail}
	if err := cmd.RunWithUi(ctx, r.comm, r.ui); err != nil {
		err = fmt.Errorf("step %s: starting `%s`: %w", step, command, err)
		r.ui.Error(err.Error())
		return "", err
	}
	if code := cmd.ExitStatus(); code != 0 {
		err := &StepError{Step: step, Command: command, ExitCode: code, Tail: tail.String()}
		r.ui.Error(err.Error())
		return tail.all(), err
	}
	return tail.all(), nil
}

// exec runs command quietly and returns its exit code and output; ctx
// bounds the whole command, also a Start that hangs on a dead connection.
func (r *remote) exec(ctx context.Context, command string) (int, string, error) {
	out := &lineTail{max: 25}
	cmd := &packersdk.RemoteCmd{Command: command, Stdout: out, Stderr: out}
	started := make(chan error, 1)
	go func() { started <- r.comm.Start(ctx, cmd) }()
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
		return code, out.all(), nil
	case <-ctx.Done():
		return -1, out.all(), ctx.Err()
	}
}

// uploadPath writes a guest path with forward slashes: the SSH
// communicator splits the destination with the build machine's path rules,
// and Windows (WinRM, OpenSSH) takes either slash.
func uploadPath(p string) string { return strings.ReplaceAll(p, `\`, "/") }

// upload copies a local file to the guest.
func (r *remote) upload(local, remote string) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return r.comm.Upload(uploadPath(remote), f, &fi)
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

// lineTail keeps all output and shows its last max lines.
type lineTail struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *lineTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.Write(p)
}

func (t *lineTail) all() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

func (t *lineTail) String() string {
	lines := strings.Split(strings.TrimRight(t.all(), "\n"), "\n")
	if len(lines) > t.max {
		lines = lines[len(lines)-t.max:]
	}
	return "  " + strings.Join(lines, "\n  ")
}
