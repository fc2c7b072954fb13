// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
)

// proc is a daemon this package started; its output goes to <dir>/<name>.log
// (mode 0600, appended to when the daemon is started again).
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// start runs argv in its own process group, so that stop ends it and
// anything it forked, and nothing else.
func start(dir, name string, argv []string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := safefile.OpenAppend(logPath, 0o600)
	if err != nil {
		return nil, fmt.Errorf("log of %s: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after 10 s, and
// waits for the process to end. A nil or ended proc is left alone.
func (p *proc) stop() {
	if p == nil || p.exited() {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// failed wraps err with p's name and the end of its log.
func (p *proc) failed(err error) error {
	return fmt.Errorf("%s: %w; last lines of %s:\n%s", p.name, err, p.log, tailFile(p.log, 30))
}

func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// poll calls ready every interval until it returns true, p exits, ctx
// ends or timeout passes. ready's last error is part of the timeout error.
func poll(ctx context.Context, p *proc, what string, timeout time.Duration, ready func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if p != nil && p.exited() {
			return p.failed(fmt.Errorf("exited before %s", what))
		}
		ok, err := ready()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			err := fmt.Errorf("not %s after %s: %w", what, timeout, ctx.Err())
			if last != nil {
				err = fmt.Errorf("%w (last error: %v)", err, last)
			}
			if p == nil {
				return err
			}
			return p.failed(err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitHTTP waits until url answers 200 through client.
func waitHTTP(ctx context.Context, p *proc, url string, client *http.Client, timeout time.Duration) error {
	return poll(ctx, p, "answering at "+url, timeout, func() (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, errors.New(resp.Status)
		}
		return true, nil
	})
}

// waitSocket waits until a unix socket accepts connections.
func waitSocket(ctx context.Context, p *proc, path string, timeout time.Duration) error {
	return poll(ctx, p, "listening on "+path, timeout, func() (bool, error) {
		c, err := net.Dial("unix", path)
		if err != nil {
			return false, err
		}
		c.Close()
		return true, nil
	})
}

// alive reports whether pid is a live process: a zombie is not (a daemon
// whose parent was a shell script is reaped by PID 1, if ever).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "pid (comm) state ...": comm may hold spaces, so look after the last ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}
