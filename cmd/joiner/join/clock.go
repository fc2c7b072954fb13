// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// MaxClockSkew is how far the node's clock may be from the API server's
// before the join fails in discovery: the kubelet's TLS bootstrap (and
// every certificate after it) fails on a node whose clock is off by more
// than the certificates' slack, slowly and with an x509 error. Tests
// change it.
var MaxClockSkew = 5 * time.Minute

// nodeClock is the node's clock (tests replace it).
var nodeClock = time.Now

// serverDate keeps the Date header of the first HTTPS response from the
// API server whose TLS was verified against the pinned CA, and the node's
// time when it arrived.
type serverDate struct {
	mu         sync.Mutex
	server, at time.Time
}

// record keeps the first response's Date header that parses.
func (s *serverDate) record(resp *http.Response) {
	if resp == nil {
		return
	}
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.server.IsZero() {
		s.server, s.at = date, nodeClock()
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// wrap records the Date header of the responses rt returns.
func (s *serverDate) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err == nil {
			s.record(resp)
		}
		return resp, err
	})
}

// clients wraps newClient so that the clients it builds with a CA to verify
// the server against (discovery's second client: the pinned CA) record the
// Date header into s. The first, unverified answer could come from anyone
// on the way, who could set the node's clock check as it likes.
func (s *serverDate) clients(newClient func(*rest.Config) (kubernetes.Interface, error)) func(*rest.Config) (kubernetes.Interface, error) {
	return func(rc *rest.Config) (kubernetes.Interface, error) {
		if rc.TLSClientConfig.Insecure || len(rc.TLSClientConfig.CAData) == 0 {
			return newClient(rc)
		}
		rc = rest.CopyConfig(rc)
		rc.WrapTransport = transport.Wrappers(rc.WrapTransport, s.wrap)
		return newClient(rc)
	}
}

// check fails when the node's clock is more than MaxClockSkew from the API
// server's, naming the skew. No Date header seen: nothing to compare.
func (s *serverDate) check(endpoint string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.server.IsZero() {
		return nil
	}
	skew := s.at.Sub(s.server)
	if skew.Abs() <= MaxClockSkew {
		return nil
	}
	way := "ahead of"
	if skew < 0 {
		way = "behind"
	}
	return fmt.Errorf("this node's clock is %s %s the API server's (node %s, API server %s by the Date header of its answer on %s; at most %s allowed): "+
		"the kubelet's TLS bootstrap would fail on certificates not yet or no longer valid. Set the node's time "+
		"(Windows: w32tm /resync; a VM's hardware clock in UTC, e.g. virt-install --clock offset=utc) and run the joiner again",
		skew.Abs().Round(time.Second), way, s.at.UTC().Format(time.RFC3339), s.server.UTC().Format(time.RFC3339), endpoint, MaxClockSkew)
}
