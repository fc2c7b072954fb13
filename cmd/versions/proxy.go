// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// defaultProxy is what the go command uses when GOPROXY is unset.
const defaultProxy = "https://proxy.golang.org"

// firstProxy is the proxy the go command asks first: GOPROXY's first
// entry (entries are separated by "," or "|"). ok is false when that entry
// is "direct" or "off", which name no proxy.
func firstProxy(goproxy string) (string, bool) {
	entries := strings.FieldsFunc(goproxy, func(r rune) bool { return r == ',' || r == '|' })
	if len(entries) == 0 || strings.TrimSpace(entries[0]) == "" {
		return defaultProxy, true
	}
	first := strings.TrimSpace(entries[0])
	if first == "direct" || first == "off" {
		return first, false
	}
	return strings.TrimSuffix(first, "/"), true
}

// escapePath writes a module path as the proxy protocol does: each
// upper-case letter becomes "!" and its lower case.
func escapePath(module string) string {
	var b strings.Builder
	for _, r := range module {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// refusedError is a proxy's answer other than 200 (a file:// proxy's
// missing file is a 404): the proxy is there, it does not serve this.
type refusedError struct{ status int }

func (e refusedError) Error() string { return fmt.Sprintf("HTTP %d", e.status) }

// unreachableError: no answer from the proxy at all.
type unreachableError struct{ err error }

func (e unreachableError) Error() string { return e.err.Error() }
func (e unreachableError) Unwrap() error { return e.err }

func isUnreachable(err error) bool {
	var u unreachableError
	return errors.As(err, &u)
}

// proxyClient reads the module proxy protocol's /@v/list and /@latest
// from an http(s) or file:// proxy.
type proxyClient struct {
	base   string
	client *http.Client
}

func (p proxyClient) get(ctx context.Context, module, file string) ([]byte, error) {
	rel := escapePath(module) + "/" + file
	if strings.HasPrefix(p.base, "file://") {
		u, err := url.Parse(p.base)
		if err != nil {
			return nil, unreachableError{err}
		}
		dir := filepath.FromSlash(u.Path)
		if _, err := os.Stat(dir); err != nil {
			return nil, unreachableError{err}
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, refusedError{http.StatusNotFound}
		}
		return b, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/"+rel, nil)
	if err != nil {
		return nil, unreachableError{err}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, unreachableError{err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, unreachableError{err}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, refusedError{resp.StatusCode}
	}
	return b, nil
}

// list returns the versions the proxy lists for a module, one a line.
func (p proxyClient) list(ctx context.Context, module string) ([]string, error) {
	b, err := p.get(ctx, module, "@v/list")
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// latest returns the version of the proxy's /@latest answer.
func (p proxyClient) latest(ctx context.Context, module string) (string, error) {
	b, err := p.get(ctx, module, "@latest")
	if err != nil {
		return "", err
	}
	var info struct{ Version string }
	if err := json.Unmarshal(b, &info); err != nil || info.Version == "" {
		return "", fmt.Errorf("@latest is not a version's info: %q", strings.TrimSpace(string(b)))
	}
	return info.Version, nil
}
