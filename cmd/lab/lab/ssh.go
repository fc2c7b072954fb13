// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
	"github.com/kubenode/packer-plugin-kubenode/internal/tick"
)

// sshTarget is a node's sshd, reached through its forwarded port. One
// connection is kept between commands: under TCG each new login (key
// exchange, PAM, a logind session) costs the guest a second or two, a
// command on a kept connection only its own run.
type sshTarget struct {
	addr string
	user string
	key  ssh.Signer

	keepalive time.Duration // keepaliveEvery when zero

	mu   sync.Mutex
	kept *ssh.Client
}

func (s *sshTarget) dial(ctx context.Context) (*ssh.Client, error) {
	cfg := &ssh.ClientConfig{
		User: s.user,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(s.key)},
		// The guest's host key is made at its first boot, on a port
		// forwarded from 127.0.0.1: there is nothing to check it against.
		HostKeyCallback: ssh.InsecureIgnoreHostKey(),
		Timeout:         10 * time.Second,
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return nil, err
	}
	// QEMU accepts the connection before the guest's sshd may: bound the
	// handshake, which has no timeout of its own.
	conn.SetDeadline(time.Now().Add(cfg.Timeout))
	c, chans, reqs, err := ssh.NewClientConn(conn, s.addr, cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

func (s *sshTarget) reachable() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.run(ctx, "true")
	return err == nil
}

// connect returns the kept connection while it answers a keepalive
// within a few seconds (a guest that rebooted or hangs does not), else a
// new one, which is kept in its place.
func (s *sshTarget) connect(ctx context.Context) (*ssh.Client, error) {
	s.mu.Lock()
	c := s.kept
	s.mu.Unlock()
	if c != nil {
		if answers(c, s.every()/2) {
			return c, nil
		}
		s.drop(c)
	}
	return s.redial(ctx)
}

// redial makes a new connection and keeps it in place of any other.
func (s *sshTarget) redial(ctx context.Context) (*ssh.Client, error) {
	c, err := s.dial(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.kept != nil {
		s.kept.Close()
	}
	s.kept = c
	s.mu.Unlock()
	return c, nil
}

// answers sends OpenSSH's keepalive request; any reply, even a refusal,
// means the connection is alive.
func answers(c *ssh.Client, within time.Duration) bool {
	done := make(chan error, 1)
	go func() {
		_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
		done <- err
	}()
	select {
	case err := <-done:
		return err == nil
	case <-time.After(within):
		return false
	}
}

// keepaliveEvery is how often a command's connection must answer a
// keepalive (as OpenSSH's ServerAliveInterval), and how long it may take.
const keepaliveEvery = 10 * time.Second

func (s *sshTarget) every() time.Duration {
	if s.keepalive > 0 {
		return s.keepalive
	}
	return keepaliveEvery
}

// watch closes c once it stops answering keepalives, until stop is
// called: a guest that reboots or dies mid-command may vanish without
// closing the connection, and the command would wait for it forever.
func watch(c *ssh.Client, every time.Duration) (stop func()) {
	return tick.Every(every, func() bool {
		if answers(c, every) {
			return true
		}
		c.Close()
		return false
	})
}

// drop closes c and forgets it if it is the kept connection.
func (s *sshTarget) drop(c *ssh.Client) {
	s.mu.Lock()
	if s.kept == c {
		s.kept = nil
	}
	s.mu.Unlock()
	c.Close()
}

// close closes the kept connection.
func (s *sshTarget) close() error {
	s.mu.Lock()
	c := s.kept
	s.kept = nil
	s.mu.Unlock()
	if c != nil {
		c.Close()
	}
	return nil
}

// run runs command in a new session on the kept connection (a new one
// when that fails to open a session) and returns its combined output.
func (s *sshTarget) run(ctx context.Context, command string) (string, error) {
	c, err := s.connect(ctx)
	if err != nil {
		return "", err
	}
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		stop := watch(c, s.every())
		defer stop()
		sess, err := c.NewSession()
		if err != nil {
			// Closed since the keepalive (the guest went down): once more
			// on a new connection.
			s.drop(c)
			nc, err := s.redial(ctx)
			if err != nil {
				done <- result{nil, err}
				return
			}
			stop := watch(nc, s.every())
			defer stop()
			if sess, err = nc.NewSession(); err != nil {
				s.drop(nc)
				done <- result{nil, err}
				return
			}
		}
		defer sess.Close()
		out, err := sess.CombinedOutput(command)
		done <- result{out, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		// A command cut short leaves its connection in doubt.
		s.close()
		c.Close()
		r = <-done
		r.err = ctx.Err()
	}
	if r.err != nil {
		return string(r.out), fmt.Errorf("%s: %w\n%s", command, r.err, r.out)
	}
	return string(r.out), nil
}

// newSSHKey makes the lab's key for the node and writes its private half
// to file (mode 0600), for `ssh -i` while the lab runs.
func newSSHKey(file string) (ssh.Signer, string, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, "", err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, "", err
	}
	block, err := ssh.MarshalPrivateKey(priv, "kubenode-lab")
	if err != nil {
		return nil, "", err
	}
	if err := safefile.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, "", err
	}
	return signer, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + " kubenode-lab", nil
}
