// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// How the push reaches a registry: over HTTPS, verified against the
// system's roots and containerdisk_ca_file, with the docker config's
// credentials. Plain HTTP only to a loopback registry or one listed in
// containerdisk_plain_http_hosts, only when it does not answer HTTPS, and
// then without credentials. go-containerregistry itself also tries plain
// HTTP for a registry at a private address (10/8, 172.16/12, 192.168/16)
// or a .local name, whatever name.Insecure says: registryTransport refuses
// those requests.

// prepareRegistryAccess checks containerdisk_plain_http_hosts and
// containerdisk_ca_file, and warns when the repository may be pushed to
// over plain HTTP.
func (c *Config) prepareRegistryAccess(add func(key, format string, args ...any)) {
	for i, h := range c.ContainerDiskPlainHTTPHosts {
		key := fmt.Sprintf("containerdisk_plain_http_hosts[%d]", i)
		if _, err := name.NewRegistry(h, name.StrictValidation); err != nil || h == "" || strings.ContainsAny(h, "/*") {
			add(key, "%q is not a registry host: use host or host:port, without a scheme or path, e.g. \"registry.lab.internal:5000\"", h)
		}
		c.ContainerDiskPlainHTTPHosts[i] = strings.ToLower(h)
	}
	if c.ContainerDiskCAFile != "" {
		pem, err := os.ReadFile(c.ContainerDiskCAFile)
		if err != nil {
			add("containerdisk_ca_file", "%v", err)
		} else {
			pool, err := x509.SystemCertPool()
			if err != nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(pem) {
				add("containerdisk_ca_file", "%s holds no PEM certificate", c.ContainerDiskCAFile)
			}
			c.caPool = pool
		}
	}
	if c.ContainerDiskRepository == "" {
		if len(c.ContainerDiskPlainHTTPHosts) > 0 || c.ContainerDiskCAFile != "" {
			add("containerdisk_repository", "is required with containerdisk_plain_http_hosts and containerdisk_ca_file: without it nothing is pushed")
		}
		return
	}
	repo, err := name.NewRepository(c.ContainerDiskRepository)
	if err != nil {
		return // reported by prepareContainerDisk
	}
	if why := c.plainHTTPReason(repo.RegistryStr()); why != "" {
		c.warnings = append(c.warnings, fmt.Sprintf("containerdisk_repository: %s is %s: when it does not answer HTTPS, the image is pushed over plain HTTP, "+
			"without the docker config's credentials, and anyone on the way can read or change it", repo.RegistryStr(), why))
	}
}

// plainHTTPReason says why host (host or host:port) may be reached over
// plain HTTP, "" when it may not.
func (c *Config) plainHTTPReason(hostport string) string {
	host, port := splitHostPort(hostport)
	if port == "" {
		port = "80" // plain HTTP's
	}
	if host == "localhost" {
		return "a loopback registry"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return "a loopback registry"
	}
	for _, e := range c.ContainerDiskPlainHTTPHosts {
		eh, ep := splitHostPort(e)
		if eh == host && (ep == "" || ep == port) {
			return "listed in containerdisk_plain_http_hosts"
		}
	}
	return ""
}

// splitHostPort splits host[:port] or [v6][:port], lowercased; port is
// "" when s has none.
func splitHostPort(s string) (host, port string) {
	s = strings.ToLower(s)
	if h, p, err := net.SplitHostPort(s); err == nil {
		return strings.Trim(h, "[]"), p
	}
	return strings.Trim(s, "[]"), ""
}

// registryTransport is the push's HTTP transport. It passes HTTPS
// requests on, and plain HTTP ones only to hosts plainHTTPReason allows,
// and only when plain is set: never while the docker config's credentials
// are in use.
type registryTransport struct {
	base  http.RoundTripper
	c     *Config
	plain bool
}

func (t *registryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		reason := ""
		switch {
		case t.c.plainHTTPReason(req.URL.Host) == "":
			reason = "only a loopback registry or one listed in containerdisk_plain_http_hosts is reached over plain HTTP"
		case !t.plain:
			reason = "it answers HTTPS, and the push uses the docker config's credentials, which never cross plain HTTP"
		}
		if reason != "" {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, fmt.Errorf("refusing plain HTTP to %s: %s", req.URL.Host, reason)
		}
	}
	return t.base.RoundTrip(req)
}

// newRegistryTransport is the transport the push uses; plain allows plain
// HTTP to the hosts plainHTTPReason names.
func (c *Config) newRegistryTransport(plain bool) *registryTransport {
	base := remote.DefaultTransport.(*http.Transport).Clone()
	if c.caPool != nil {
		base.TLSClientConfig = &tls.Config{RootCAs: c.caPool, MinVersion: tls.VersionTLS12}
	}
	return &registryTransport{base: base, c: c, plain: plain}
}

// pushContainerDisk pushes img as ref, reporting each 10%, then its
// referrers (by digest; a registry without the referrers API gets the
// fallback tag sha256-<digest> that lists them), and returns the pushed
// reference by digest. Over HTTPS it sends the docker config's
// credentials; a registry plainHTTPReason allows that does not answer
// HTTPS is pushed to over plain HTTP without any.
func pushContainerDisk(ctx context.Context, ui packersdk.Ui, c *Config, img v1.Image, ref name.Tag, referrers []v1.Image) (string, error) {
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	hint := fmt.Sprintf("check containerdisk_repository and `docker login %s`; containerdisk_ca_file trusts a private CA, containerdisk_plain_http_hosts lets a registry without TLS be reached over plain HTTP", ref.RegistryStr())
	plain := false
	if c.plainHTTPReason(ref.RegistryStr()) != "" {
		// Which scheme it answers decides whether credentials may go.
		reg, err := name.NewRegistry(ref.RegistryStr(), name.Insecure)
		if err != nil {
			return "", err
		}
		ch, err := transport.Ping(ctx, reg, c.newRegistryTransport(true))
		if err != nil {
			return "", fmt.Errorf("pushing %s: %w (%s)", ref, err, hint)
		}
		if ch.Insecure {
			plain = true
			ui.Error(fmt.Sprintf("kubenode-export: warning: %s does not answer HTTPS: pushing over plain HTTP, without credentials", ref.RegistryStr()))
			if ref, err = name.NewTag(ref.String(), name.Insecure); err != nil {
				return "", err
			}
			hint = "pushed over plain HTTP, without credentials: the docker config's credentials never cross plain HTTP; a registry that needs them needs TLS (containerdisk_ca_file for a private CA)"
		}
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(c.newRegistryTransport(plain))}
	if plain {
		opts = append(opts, remote.WithAuth(authn.Anonymous))
	} else {
		opts = append(opts, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	}
	updates := make(chan v1.Update, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := -1
		for u := range updates {
			if u.Total <= 0 {
				continue
			}
			if step := int(u.Complete*100/u.Total) / 10 * 10; step > last {
				last = step
				ui.Message(fmt.Sprintf("pushing %s: %d%%", ref, step))
			}
		}
	}()
	err = remote.Write(ref, img, append(opts, remote.WithProgress(updates))...)
	<-done
	if err != nil {
		return "", fmt.Errorf("pushing %s: %w (%s)", ref, err, hint)
	}
	for _, r := range referrers {
		d, err := r.Digest()
		if err != nil {
			return "", err
		}
		at := ref.Context().Digest(d.String())
		if err := remote.Write(at, r, opts...); err != nil {
			return "", fmt.Errorf("pushing the SBOM and provenance referring to %s: %s: %w (%s)", ref, at, err, hint)
		}
		ui.Message("pushed " + at.String())
	}
	return ref.Context().Digest(digest.String()).String(), nil
}
