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

// linuxRemote runs the Linux bake's scripts through the communicator.
type linuxRemote struct {
	comm packersdk.Communicator
	ui   packersdk.Ui
	// sudo prefixes commands when the communicator's user is not root.
	sudo string
}

// output runs command and returns its stdout, without showing it.
func (r *linuxRemote) output(ctx context.Context, command string) (string, int, error) {
	var out, errOut bytes.Buffer
	cmd := &packersdk.RemoteCmd{Command: command, Stdout: &out, Stderr: &errOut}
	if err := r.comm.Start(ctx, cmd); err != nil {
		return "", -1, err
	}
	code := cmd.Wait()
	return strings.TrimSpace(out.String() + errOut.String()), code, nil
}

// run runs command, showing its output in the UI; a non-zero exit is an
// error that names the step and carries the command, its exit code and
// the tail of its output.
func (r *linuxRemote) run(ctx context.Context, step, command string) (string, error) {
	tail := &lineTail{max: 25}
	cmd := &packersdk.RemoteCmd{Command: command, Stdout: tail, Stderr: tail}
	if err := cmd.RunWithUi(ctx, r.comm, r.ui); err != nil {
		return "", fmt.Errorf("%s: starting `%s`: %w", step, command, err)
	}
	if code := cmd.ExitStatus(); code != 0 {
		return tail.all(), &StepError{Step: step, Command: command, ExitCode: code, Tail: tail.String()}
	}
	return tail.all(), nil
}

// upload copies a local file to the guest.
func (r *linuxRemote) upload(local, remote string) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return r.comm.Upload(remote, f, &fi)
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
