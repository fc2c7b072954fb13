// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	jws "k8s.io/cluster-bootstrap/token/jws"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"
)

// discover does what kubeadm's token discovery does, before anything is
// written: fetch cluster-info without trusting the server, check the
// token's JWS signature on it, pin its CA against caCertHashes, then fetch
// it again over TLS verified by that CA. It retries while the API server
// is unreachable or the token's signature is not there yet. Then it
// compares the node's clock with the Date header of the API server's first
// answer over TLS verified by the pinned CA (see MaxClockSkew).
func discover(ctx context.Context, d *data) error {
	cfg := d.cfg
	var info *ClusterInfo
	dates := &serverDate{}
	err := poll(ctx, d, cfg.Timeouts.Discovery.Duration, func(ctx context.Context) error {
		var err error
		info, err = FetchClusterInfo(ctx, dates.clients(d.opts.NewClient), cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w\nnothing was written to this node; check apiServerEndpoint and that the token is valid "+
			"(`kubeadm token list` on the control plane; make a new one with `joiner token`)", err)
	}
	// Before the TLS bootstrap, which fails late and obscurely on a wrong clock.
	if err := dates.check(cfg.APIServerEndpoint); err != nil {
		return fmt.Errorf("%w\nnothing was written to this node", err)
	}
	d.ca, d.caPEM, d.serverURL, d.serverVersion = info.CA, info.CAPEM, info.Server, info.Version
	fmt.Fprintf(d.opts.Log, "[discovery] cluster-info signed for token %s; CA %s; API server %s, Kubernetes %s\n",
		tokenID(cfg.Token), pubkeypin.Hash(info.CA[0]), info.Server, info.Version.GitVersion)
	return nil
}

// ClusterInfo is what discovery learned.
type ClusterInfo struct {
	Server  string // the API server URL cluster-info names (kubeadm bootstraps against it)
	CA      []*x509.Certificate
	CAPEM   []byte
	Version *version.Info
}

// errNotSigned: cluster-info has no signature for the token (yet).
var errNotSigned = errors.New("cluster-info is not signed for this token")

// FetchClusterInfo runs one discovery attempt. Errors a retry cannot fix
// (a bad signature, a CA that does not match the pin) are permanent.
func FetchClusterInfo(ctx context.Context, newClient func(*rest.Config) (kubernetes.Interface, error), cfg *config.Config) (*ClusterInfo, error) {
	host := "https://" + cfg.APIServerEndpoint
	dial := extraHostsDial(cfg.ExtraHosts)
	insecure, err := newClient(&rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, Timeout: 10 * time.Second, Dial: dial})
	if err != nil {
		return nil, permanent(err)
	}
	kubeconfig, err := signedClusterInfo(ctx, insecure, cfg.Token)
	if err != nil {
		return nil, err
	}
	kc, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		return nil, permanent(fmt.Errorf("cluster-info holds no valid kubeconfig: %w", err))
	}
	var server string
	var caPEM []byte
	for _, c := range kc.Clusters {
		server, caPEM = c.Server, c.CertificateAuthorityData
		break
	}
	ca, err := certutil.ParseCertsPEM(caPEM)
	if err != nil || len(ca) == 0 {
		return nil, permanent(fmt.Errorf("cluster-info holds no CA certificate: %v", err))
	}
	if !cfg.UnsafeSkipCAVerification {
		pins := pubkeypin.NewSet()
		if err := pins.Allow(cfg.CACertHashes...); err != nil {
			return nil, permanent(fmt.Errorf("caCertHashes: %w", err))
		}
		if err := pins.CheckAny(ca); err != nil {
			return nil, permanent(fmt.Errorf("the cluster's CA is %s, which is not in caCertHashes %v: refusing to trust this API server "+
				"(a wrong hash, or a different cluster answering on %s)", pubkeypin.Hash(ca[0]), cfg.CACertHashes, cfg.APIServerEndpoint))
		}
	}
	// Again, now trusting only the pinned CA: the first answer could have
	// come from anyone.
	secure, err := newClient(&rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}, Timeout: 10 * time.Second, Dial: dial})
	if err != nil {
		return nil, permanent(err)
	}
	again, err := signedClusterInfo(ctx, secure, cfg.Token)
	if err != nil {
		return nil, err
	}
	if again != kubeconfig {
		return nil, permanent(errors.New("cluster-info changed between the unverified and the CA-verified request: refusing to trust this API server"))
	}
	if isLoopback(server) && !isLoopback(host) {
		return nil, permanent(fmt.Errorf("cluster-info names the API server %s, a loopback address, and kubeadm bootstraps the kubelet against it; "+
			"set the cluster's controlPlaneEndpoint to an address this node reaches (it reached %s)", server, cfg.APIServerEndpoint))
	}
	v, err := secure.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the API server's version: %w", err)
	}
	return &ClusterInfo{Server: server, CA: ca, CAPEM: caPEM, Version: v}, nil
}

// extraHostsDial dials a host that extraHosts names at their address
// (nil: no entries, the default dialer): the hosts file gets them only
// once discovery has verified the cluster, yet apiServerEndpoint may be a
// name only they resolve. The TLS server name stays the host name.
func extraHostsDial(hosts []corev1.HostAlias) func(ctx context.Context, network, address string) (net.Conn, error) {
	if len(hosts) == 0 {
		return nil
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		return d.DialContext(ctx, network, ExtraHostsAddress(hosts, address))
	}
}

// ExtraHostsAddress is address (host:port) with its host replaced by the
// IP extraHosts give it, if any (the first entry naming it wins, as in a
// hosts file).
func ExtraHostsAddress(hosts []corev1.HostAlias, address string) string {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return address
	}
	for _, h := range hosts {
		for _, name := range h.Hostnames {
			if strings.EqualFold(name, host) {
				return net.JoinHostPort(h.IP, port)
			}
		}
	}
	return address
}

func signedClusterInfo(ctx context.Context, client kubernetes.Interface, token string) (string, error) {
	cm, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return "", fmt.Errorf("reading kube-public/cluster-info anonymously: %w (is the cluster set up for token bootstrap? `joiner doctor` tells)", err)
		}
		return "", fmt.Errorf("reading kube-public/cluster-info: %w", err)
	}
	kubeconfig := cm.Data[bootstrapapi.KubeConfigKey]
	if kubeconfig == "" {
		return "", permanent(errors.New("kube-public/cluster-info has no kubeconfig"))
	}
	id, secret, _ := strings.Cut(token, ".")
	sig, ok := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id]
	if !ok {
		return "", fmt.Errorf("%w: no %s%s key; the token does not exist, has expired or was deleted "+
			"(or the bootstrapsigner controller has not signed it yet)", errNotSigned, bootstrapapi.JWSSignatureKeyPrefix, id)
	}
	if !jws.DetachedTokenIsValid(sig, kubeconfig, id, secret) {
		return "", permanent(fmt.Errorf("cluster-info's signature for token %s does not verify: the token's secret is wrong", id))
	}
	return kubeconfig, nil
}

func tokenID(token string) string {
	id, _, _ := strings.Cut(token, ".")
	return id
}

func isLoopback(serverURL string) bool {
	u, err := url.Parse(serverURL)
	if err != nil {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}
