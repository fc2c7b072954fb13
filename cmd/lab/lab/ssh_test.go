// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// fakeSSHD is an in-process SSH server whose sessions print the command
// they were given; it counts logins and can drop or freeze them all, as a
// guest that reboots or hangs does.
type fakeSSHD struct {
	addr    string
	hostKey ssh.PublicKey

	mu     sync.Mutex
	logins int
	conns  []net.Conn
	frozen bool // neither keepalives nor commands get an answer
}

func startFakeSSHD(t *testing.T, client ssh.PublicKey) *fakeSSHD {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	host, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if string(k.Marshal()) != string(client.Marshal()) {
			return nil, assert.AnError
		}
		return nil, nil
	}}
	cfg.AddHostKey(host)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	f := &fakeSSHD{addr: l.Addr().String(), hostKey: host.PublicKey()}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go f.serve(conn, cfg)
		}
	}()
	return f
}

func (f *fakeSSHD) serve(conn net.Conn, cfg *ssh.ServerConfig) {
	sc, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		conn.Close()
		return
	}
	f.mu.Lock()
	f.logins++
	f.conns = append(f.conns, conn)
	f.mu.Unlock()
	defer sc.Close()
	go func() {
		for r := range reqs { // keepalives: answered unless frozen
			f.mu.Lock()
			frozen := f.frozen
			f.mu.Unlock()
			if !frozen && r.WantReply {
				r.Reply(false, nil)
			}
		}
	}()
	for nc := range chans {
		ch, in, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for r := range in {
				if r.Type == "exec" {
					f.mu.Lock()
					frozen := f.frozen
					f.mu.Unlock()
					if frozen {
						continue // a guest gone mid-command: no answer, no close
					}
					var p struct{ Command string }
					ssh.Unmarshal(r.Payload, &p)
					r.Reply(true, nil)
					ch.Write([]byte(p.Command))
					ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
					return
				}
				r.Reply(false, nil)
			}
		}()
	}
}

// dropAll closes every connection, as a guest's reboot does.
func (f *fakeSSHD) dropAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

func (f *fakeSSHD) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logins
}

func TestSSHTargetKeepsOneLoginAndRedialsWhenItDies(t *testing.T) {
	key, _, err := newSSHKey(filepath.Join(t.TempDir(), "key"))
	require.NoError(t, err)
	f := startFakeSSHD(t, key.PublicKey())
	s := &sshTarget{addr: f.addr, user: "kubenode", key: key}
	defer s.close()
	ctx := context.Background()

	for _, cmd := range []string{"hostname", "cat /etc/machine-id", "true"} {
		out, err := s.run(ctx, cmd)
		require.NoError(t, err)
		assert.Equal(t, cmd, out)
	}
	assert.Equal(t, 1, f.count(), "three commands, one login")

	f.dropAll() // the guest rebooted
	out, err := s.run(ctx, "cat /proc/sys/kernel/random/boot_id")
	require.NoError(t, err)
	assert.Equal(t, "cat /proc/sys/kernel/random/boot_id", out)
	assert.Equal(t, 2, f.count(), "a new login once the kept one is gone")

	// A connection that no longer answers its keepalive is replaced.
	f.mu.Lock()
	f.frozen = true
	f.mu.Unlock()
	began := time.Now()
	ok := answers(s.kept, 200*time.Millisecond)
	assert.False(t, ok, "a frozen connection does not answer")
	assert.Less(t, time.Since(began), 2*time.Second)
	f.mu.Lock()
	f.frozen = false
	f.mu.Unlock()
	s.drop(s.kept)
	_, err = s.run(ctx, "true")
	require.NoError(t, err)
	assert.Equal(t, 3, f.count())
}

// A command whose guest vanishes without closing the connection (a reboot
// behind QEMU's user networking) ends once keepalives go unanswered,
// instead of waiting forever; the next command logs in again.
func TestSSHTargetGivesUpOnAConnectionThatStopsAnswering(t *testing.T) {
	key, _, err := newSSHKey(filepath.Join(t.TempDir(), "key"))
	require.NoError(t, err)
	f := startFakeSSHD(t, key.PublicKey())
	s := &sshTarget{addr: f.addr, user: "kubenode", key: key, keepalive: 100 * time.Millisecond}
	defer s.close()
	ctx := context.Background()
	_, err = s.run(ctx, "true")
	require.NoError(t, err)

	f.mu.Lock()
	f.frozen = true
	f.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := s.run(ctx, "systemctl reboot")
		done <- err
	}()
	select {
	case err := <-done:
		assert.Error(t, err, "the command cannot have succeeded")
	case <-time.After(5 * time.Second):
		t.Fatal("the command still waits on a connection that stopped answering")
	}
	f.mu.Lock()
	f.frozen = false
	f.mu.Unlock()
	out, err := s.run(ctx, "cat /proc/sys/kernel/random/boot_id")
	require.NoError(t, err)
	assert.Equal(t, "cat /proc/sys/kernel/random/boot_id", out)
}

// The host key is read in the handshake, with no login: what a node the
// lab has no SSH into shows of its sshd.
func TestHostKeyIsReadWithoutALogin(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	client, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	f := startFakeSSHD(t, client.PublicKey())
	got, err := hostKey(context.Background(), f.addr)
	require.NoError(t, err)
	assert.Equal(t, ssh.FingerprintSHA256(f.hostKey), got)
	assert.Regexp(t, `^SHA256:[A-Za-z0-9+/]{43}$`, got, "as ssh-keygen -l prints it")
	f.mu.Lock()
	assert.Zero(t, f.logins, "no login")
	f.mu.Unlock()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	l.Close()
	_, err = hostKey(context.Background(), closed)
	assert.Error(t, err, "nothing listening")
}
