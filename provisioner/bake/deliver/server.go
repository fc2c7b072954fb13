// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package deliver serves a bake's artifacts to the guest over HTTP from the
// build machine: a server of the bake's own, listening only while the guest
// downloads, that answers GET and HEAD for the listed files under a random
// path prefix and nothing else. The guest checks each file's sha256 after
// the download, as it does after an upload through the communicator.
package deliver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// How artifacts reach the guest (the `artifact_delivery` key).
const (
	// HTTP: the guest downloads them from the bake's server.
	HTTP = "http"
	// Communicator: they are uploaded over SSH or WinRM.
	Communicator = "communicator"
)

// UserNetGateway is this machine as a guest on QEMU user networking sees
// it; connections to it arrive on this machine's loopback address.
const UserNetGateway = "10.0.2.2"

// BindAddress is the address to listen on so that a guest reaching this
// machine at httpIP arrives: the loopback address for QEMU user
// networking's gateway, otherwise httpIP itself (an address of this
// machine on the guest's network, bridge or route).
func BindAddress(httpIP string) string {
	if httpIP == UserNetGateway {
		return "127.0.0.1"
	}
	return httpIP
}

// Server serves artifacts until Close.
type Server struct {
	// Fallback: when the guest cannot download the artifacts (it cannot
	// reach the server: a firewall, a route), they are uploaded through
	// the communicator instead of failing the build. Set when HTTP was
	// chosen by default rather than asked for. A file that arrives but
	// differs from its checksum never falls back.
	Fallback bool

	srv    *http.Server
	origin string
	prefix string
	files  map[string]string // file name -> local path
	done   chan struct{}
	once   sync.Once

	requests atomic.Int64
	bytes    atomic.Int64
}

// Start listens on bind:port (port 0: any free port) and serves each
// artifact's Local file at URL(a), which names the guest's address of this
// machine, advertise.
func Start(bind string, port int, advertise string, arts []versions.Artifact) (*Server, error) {
	if net.ParseIP(advertise) == nil {
		return nil, fmt.Errorf("%q is not an IP address", advertise)
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	s := &Server{prefix: "/" + hex.EncodeToString(token) + "/", files: map[string]string{}, done: make(chan struct{})}
	for _, a := range arts {
		if a.FileName == "" || a.Local == "" {
			return nil, fmt.Errorf("artifact %s: no file to serve", a.Name)
		}
		s.files[a.FileName] = a.Local
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	s.origin = "http://" + net.JoinHostPort(advertise, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    8 << 10,
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// URL is where the guest downloads artifact a.
func (s *Server) URL(a versions.Artifact) string { return s.origin + s.prefix + a.FileName }

// Origin is the server's scheme, address and port, without the secret
// path: what may be shown in the UI and logs.
func (s *Server) Origin() string { return s.origin }

// Served is how many requests were answered with a file, and how many of
// its bytes were sent.
func (s *Server) Served() (requests, bytes int64) { return s.requests.Load(), s.bytes.Load() }

// Close stops the server at once, ending any download still running.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		err = s.srv.Close()
		<-s.done
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	})
	return err
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name, ok := cutPrefix(r.URL.Path, s.prefix)
	local, known := s.files[name]
	if !ok || !known {
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(local)
	if err != nil {
		http.Error(w, "artifact unavailable", http.StatusInternalServerError)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		http.Error(w, "artifact unavailable", http.StatusInternalServerError)
		return
	}
	s.requests.Add(1)
	cw := &countingWriter{ResponseWriter: w, n: &s.bytes}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(cw, r, "", fi.ModTime(), f)
}

// cutPrefix is strings.CutPrefix for a path whose rest is one file name.
func cutPrefix(p, prefix string) (string, bool) {
	if len(p) <= len(prefix) || p[:len(prefix)] != prefix {
		return "", false
	}
	rest := p[len(prefix):]
	for i := 0; i < len(rest); i++ {
		if rest[i] == '/' {
			return "", false
		}
	}
	return rest, true
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// ReadFrom keeps the response's own ReadFrom (sendfile for a file).
func (c *countingWriter) ReadFrom(r io.Reader) (int64, error) {
	n, err := io.Copy(c.ResponseWriter, r)
	c.n.Add(n)
	return n, err
}

// Size is the artifacts' total size on this machine, in bytes.
func Size(arts []versions.Artifact) int64 {
	var n int64
	for _, a := range arts {
		if fi, err := os.Stat(a.Local); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// Rate describes a transfer of n bytes in d, e.g. "312.4 MiB in 12.3s
// (25.4 MiB/s)".
func Rate(n int64, d time.Duration) string {
	mib := float64(n) / (1 << 20)
	secs := d.Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	return fmt.Sprintf("%.1f MiB in %.1fs (%.1f MiB/s)", mib, secs, mib/secs)
}
