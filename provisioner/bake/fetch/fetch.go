// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fetch finds the artifacts a bake installs: on this machine
// (given files, a directory of them) or downloaded into a
// content-addressed cache, through download mirrors and a proxy, each
// checked against its published checksum and the checksums the
// configuration gives. It knows the HCL keys only to name them in its
// errors.
package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"golang.org/x/net/http/httpproxy"

	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// Options are what the downloads take from the configuration; each field
// says its HCL key.
type Options struct {
	// Artifacts are local files by artifact name (artifacts).
	Artifacts map[string]string
	// Dir holds artifacts under their file names (artifacts_dir).
	Dir string
	// Checksums are the expected sha256 by artifact name, lowercase hex
	// (artifact_checksums).
	Checksums map[string]string
	// Mirrors map a URL prefix to the one that replaces it, as
	// CleanMirrors returns them (download_mirrors).
	Mirrors map[string]string
	// TrustHTTPMirrorChecksums takes a plain-HTTP mirror's checksum files
	// on trust (trust_http_mirror_checksums).
	TrustHTTPMirrorChecksums bool
	// CacheDir is where downloads are kept (download_cache_dir).
	CacheDir string
	// The proxies of downloads (http_proxy, https_proxy, no_proxy); with
	// neither proxy set, the environment's.
	HTTPProxy, HTTPSProxy, NoProxy string
}

// Prepare checks the artifacts' keys (artifacts, artifacts_dir,
// artifact_checksums), writes the checksums in lowercase without a
// "sha256:" prefix, and makes CacheDir Packer's cache when it is unset.
func (o *Options) Prepare() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.Dir != "" {
		if fi, err := os.Stat(o.Dir); err != nil || !fi.IsDir() {
			add("artifacts_dir: %q is not a directory", o.Dir)
		}
	}
	known := strings.Join(versions.ArtifactNames, ", ")
	for _, name := range slices.Sorted(maps.Keys(o.Artifacts)) {
		if !slices.Contains(versions.ArtifactNames, name) {
			add("artifacts: unknown artifact %q (known: %s)", name, known)
		} else if _, err := os.Stat(o.Artifacts[name]); err != nil {
			add("artifacts.%s: %v", name, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(o.Checksums)) {
		sum := strings.TrimPrefix(strings.ToLower(o.Checksums[name]), "sha256:")
		if !slices.Contains(versions.ArtifactNames, name) {
			add("artifact_checksums: unknown artifact %q (known: %s)", name, known)
		} else if !IsSHA256(sum) {
			add("artifact_checksums.%s: want 64 hex digits of a sha256", name)
		}
		o.Checksums[name] = sum
	}
	if o.CacheDir == "" {
		dir, err := packersdk.CachePath("kubenode-bake")
		if err != nil {
			add("download_cache_dir: %v", err)
		}
		o.CacheDir = dir
	}
	o.CacheDir = filepath.Clean(o.CacheDir)
	return errs
}

// UI is where Resolve reports progress (a packer.Ui).
type UI interface {
	Say(string)
	Message(string)
}

// Resolve finds each artifact locally (`artifacts`, then `artifacts_dir`)
// or downloads it, and checks its sha256 against `artifact_checksums` and
// the published checksum. Every missing or mismatching artifact is
// reported, by name, before anything runs on the guest.
//
// A downloaded artifact's sha256, the one the guest checks after the
// upload, is the digest the download verified against the published
// checksum, never a later reading of the cached file: a file changed in the
// cache in between fails here, and one changed after this fails on the
// guest.
func (o Options) Resolve(ctx context.Context, ui UI, arts []versions.Artifact) ([]versions.Artifact, error) {
	var errs *packersdk.MultiError
	out := make([]versions.Artifact, 0, len(arts))
	told := map[string]bool{} // the download_mirrors prefixes the UI named
	for _, a := range arts {
		var verified string // the published sha256 the download was checked against
		local, err := o.Local(a)
		if err == nil && local == "" {
			if a.URL == "" {
				err = fmt.Errorf("artifact %s: no local file (set artifacts.%s or put %s in artifacts_dir) and no download URL", a.Name, a.Name, a.FileName)
			} else {
				unproven := o.unprovenChecksum(a)
				var used []string
				a, used = o.mirrored(a)
				for _, prefix := range used {
					if !told[prefix] {
						told[prefix] = true
						ui.Say(fmt.Sprintf("kubenode-bake: download_mirrors: %s/... is downloaded from %s/...", prefix, o.Mirrors[prefix]))
					}
				}
				if unproven != "" {
					err = fmt.Errorf("artifact %s: download_mirrors fetches its checksum file %s over plain HTTP, which proves nothing about the download: "+
						"give its sha256 as artifact_checksums.%s, use an https:// mirror, or set trust_http_mirror_checksums = true for a mirror on a path nobody else is on",
						a.Name, unproven, a.Name)
				} else if local, verified, err = o.download(ctx, ui, a); err == nil {
					afterDownload(local)
				}
			}
		}
		if err == nil {
			a.Local = local
			a.SHA256, err = filehash.SHA256(local)
		}
		if err == nil && verified != "" && a.SHA256 != verified {
			err = fmt.Errorf("artifact %s: %s has sha256 %s, not the %s verified against %s when it was downloaded: the cached file changed since; remove it and run the build again",
				a.Name, local, a.SHA256, verified, a.ChecksumURL)
		}
		if err == nil {
			if want := o.Checksums[a.Name]; want != "" && want != a.SHA256 {
				err = fmt.Errorf("artifact %s: %s has sha256 %s, artifact_checksums.%s says %s", a.Name, local, a.SHA256, a.Name, want)
			}
		}
		if err != nil {
			errs = packersdk.MultiErrorAppend(errs, err)
			continue
		}
		out = append(out, a)
	}
	if errs != nil {
		return nil, errs
	}
	return out, nil
}

// afterDownload runs between a download and the check of the cached file:
// tests change the file there.
var afterDownload = func(string) {}

// Local is the local file of a (artifacts, then artifacts_dir), "" when
// there is none and a is downloaded.
func (o Options) Local(a versions.Artifact) (string, error) {
	if p, ok := o.Artifacts[a.Name]; ok {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("artifact %s: artifacts.%s: %w", a.Name, a.Name, err)
		}
		return p, nil
	}
	if o.Dir != "" {
		p := filepath.Join(o.Dir, a.FileName)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if a.URL == "" {
			return "", fmt.Errorf("artifact %s: %s is not in artifacts_dir %s", a.Name, a.FileName, o.Dir)
		}
	}
	return "", nil
}

// Download timeouts. None bounds a whole download: a large file over a
// slow link may take long, as long as data keeps coming. Tests shrink them.
var downloadTimeouts = struct {
	// Connect is for the TCP connection, TLS for its handshake.
	Connect, TLS time.Duration
	// Header bounds the wait for the response's headers once the request
	// is sent.
	Header time.Duration
	// Idle bounds a pause in the body: no byte for this long fails it.
	Idle time.Duration
}{Connect: 30 * time.Second, TLS: 30 * time.Second, Header: time.Minute, Idle: 2 * time.Minute}

// downloadClient is the HTTP client for artifacts and their checksums.
func downloadClient(proxy func(*http.Request) (*url.URL, error)) *http.Client {
	t := downloadTimeouts
	return &http.Client{Transport: &http.Transport{
		Proxy:                 proxy,
		DialContext:           (&net.Dialer{Timeout: t.Connect, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   t.TLS,
		ResponseHeaderTimeout: t.Header,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}}
}

// get sends a GET whose body fails when no byte arrives for
// downloadTimeouts.Idle; the caller closes the body.
func get(ctx context.Context, client *http.Client, u string) (*http.Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return nil, fmt.Errorf("GET %s: %w (check the network or http_proxy/https_proxy)", u, err)
		}
		return nil, err
	}
	idle := &idleBody{body: resp.Body, cancel: cancel, idle: downloadTimeouts.Idle, url: u}
	idle.timer = time.AfterFunc(idle.idle, idle.expire)
	resp.Body = idle
	return resp, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// idleBody cancels its request when no byte arrived for idle.
type idleBody struct {
	body    io.ReadCloser
	cancel  context.CancelFunc
	timer   *time.Timer
	idle    time.Duration
	url     string
	expired atomic.Bool
}

func (b *idleBody) expire() {
	b.expired.Store(true)
	b.cancel()
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	if err != nil && err != io.EOF && b.expired.Load() {
		err = fmt.Errorf("GET %s: no data for %s: %w", b.url, b.idle, err)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	b.cancel()
	return b.body.Close()
}

// download fetches a.URL into the cache, keyed by its published checksum,
// through the configured proxy; it returns the cached file and the
// published sha256 the file was verified against. a's URLs are the final
// ones, download_mirrors applied. The cache is content-addressed
// (<sha256>/<file name>) and a cached file is used only when its sha256 is
// the one just read from the checksum URL, so a file from a mirror and one
// from upstream share an entry only when they are the same bytes.
func (o Options) download(ctx context.Context, ui UI, a versions.Artifact) (string, string, error) {
	client := downloadClient(o.proxyFunc())
	want, origin := a.PinnedSHA256, "the version table pins"
	if a.ChecksumURL != "" {
		var err error
		if want, err = publishedSHA256(ctx, client, a.ChecksumURL, a.FileName); err != nil {
			return "", "", fmt.Errorf("artifact %s: %w", a.Name, err)
		}
		origin = a.ChecksumURL + " publishes"
	} else if !IsSHA256(want) {
		return "", "", fmt.Errorf("artifact %s: no published checksum and no sha256 pinned for %s; give the file as artifacts.%s", a.Name, a.URL, a.Name)
	}
	dst := filepath.Join(o.CacheDir, want, a.FileName)
	if got, err := filehash.SHA256(dst); err == nil && got == want {
		ui.Message(fmt.Sprintf("%s: cached at %s", a.Name, dst))
		return dst, want, nil
	}
	ui.Message(fmt.Sprintf("%s: downloading %s", a.Name, a.URL))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", "", err
	}
	resp, err := get(ctx, client, a.URL)
	if err != nil {
		return "", "", fmt.Errorf("artifact %s: %w", a.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("artifact %s: GET %s: %s", a.Name, a.URL, resp.Status)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+a.FileName+".*")
	if err != nil {
		return "", "", err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), resp.Body); err != nil {
		tmp.Close()
		return "", "", fmt.Errorf("artifact %s: downloading %s: %w", a.Name, a.URL, err)
	}
	if err := tmp.Close(); err != nil {
		return "", "", err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return "", "", fmt.Errorf("artifact %s: %s has sha256 %s but %s %s", a.Name, a.URL, got, origin, want)
	}
	return dst, want, os.Rename(tmp.Name(), dst)
}

// publishedSHA256 reads a checksum file: a bare hex digest (dl.k8s.io's
// .sha256) or sha256sum lines, from which the one naming file is taken.
func publishedSHA256(ctx context.Context, client *http.Client, u, file string) (string, error) {
	resp, err := get(ctx, client, u)
	if err != nil {
		return "", fmt.Errorf("reading the published checksum: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("reading the published checksum: GET %s: %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) == 1 && len(lines) == 1 && IsSHA256(strings.ToLower(f[0])) {
			return strings.ToLower(f[0]), nil
		}
		if len(f) >= 2 && strings.TrimPrefix(f[len(f)-1], "*") == file && IsSHA256(strings.ToLower(f[0])) {
			return strings.ToLower(f[0]), nil
		}
	}
	return "", fmt.Errorf("%s holds no sha256 for %s", u, file)
}

func (o Options) proxyFunc() func(*http.Request) (*url.URL, error) {
	if o.HTTPProxy == "" && o.HTTPSProxy == "" {
		return http.ProxyFromEnvironment
	}
	p := (&httpproxy.Config{HTTPProxy: o.HTTPProxy, HTTPSProxy: o.HTTPSProxy, NoProxy: o.NoProxy}).ProxyFunc()
	return func(r *http.Request) (*url.URL, error) { return p(r.URL) }
}

// IsSHA256 says whether s is a sha256 in lowercase hex.
func IsSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}
