// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package token is `joiner token`, run on the control-plane side with an
// admin kubeconfig: it creates a bootstrap token, reads the CA pin from
// kube-public/cluster-info once the token has signed it, and writes the
// node's join configuration, or a seed disc holding it.
package token

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	jws "k8s.io/cluster-bootstrap/token/jws"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"
)

// Options of a token run.
type Options struct {
	TTL         time.Duration
	Usages      []string
	Groups      []string
	Description string
	// Node is the rest of the join configuration (endpoint, name, labels,
	// ...); the token and the CA hashes are filled in.
	Node *config.Config
	// SignedTimeout bounds the wait for the bootstrapsigner to sign
	// cluster-info with the new token.
	SignedTimeout time.Duration
	Interval      time.Duration
	Log           io.Writer
}

// Defaults as kubeadm's `token create`.
var (
	DefaultUsages = []string{"signing", "authentication"}
	DefaultGroups = []string{"system:bootstrappers:kubeadm:default-node-token"}
)

// CheckTTL refuses a lifetime that would make a token never expire by
// mistake: kubeadm's secret gets an expiry only for a positive TTL, so a
// negative one never expires, and a shared token (one for many nodes)
// that never expires joins any number of machines for ever. 0 for one
// node's token is allowed: the flag says it never expires.
func CheckTTL(ttl time.Duration, shared bool) error {
	switch {
	case ttl < 0:
		return fmt.Errorf("--ttl %s: a negative lifetime would make a token that never expires; give a positive duration such as 2h", ttl)
	case ttl == 0 && shared:
		return errors.New("--ttl 0 with --shared-token: a shared token that never expires joins any number of machines for ever; give a positive duration such as 2h")
	}
	return nil
}

// Create makes a bootstrap token and returns the node's join
// configuration with the token and the CA pin.
func Create(ctx context.Context, client kubernetes.Interface, o Options) (*config.Config, error) {
	if err := CheckTTL(o.TTL, false); err != nil {
		return nil, err
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if err := bootstraputil.ValidateUsages(o.Usages); err != nil {
		return nil, fmt.Errorf("--usages: %w", err)
	}
	for _, g := range o.Groups {
		if err := bootstraputil.ValidateBootstrapGroupName(g); err != nil {
			return nil, fmt.Errorf("--groups: %w", err)
		}
	}
	cfg := o.Node
	if cfg == nil {
		cfg = config.New()
	}
	var tok *bootstraptokenv1.BootstrapTokenString
	for {
		raw, err := bootstraputil.GenerateBootstrapToken()
		if err != nil {
			return nil, err
		}
		if tok, err = bootstraptokenv1.NewBootstrapTokenString(raw); err != nil {
			return nil, err
		}
		bt := &bootstraptokenv1.BootstrapToken{
			Token:       tok,
			Description: o.Description,
			TTL:         &metav1.Duration{Duration: o.TTL},
			Usages:      o.Usages,
			Groups:      o.Groups,
		}
		_, err = client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, bootstraptokenv1.BootstrapTokenToSecret(bt), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue // the same random ID twice: draw again
		}
		if err != nil {
			return nil, fmt.Errorf("creating the bootstrap token secret: %w", err)
		}
		break
	}
	fmt.Fprintf(o.Log, "[token] created bootstrap token %s (ttl %s)\n", tok.ID, o.TTL)

	server, hashes, err := waitSigned(ctx, client, tok, o)
	if err != nil {
		return nil, err
	}
	cfg.Token = tok.String()
	cfg.CACertHashes = hashes
	if cfg.APIServerEndpoint == "" {
		u, err := url.Parse(server)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("cluster-info names the API server %q: pass --api-server-endpoint", server)
		}
		cfg.APIServerEndpoint = u.Host
	}
	return cfg, nil
}

// waitSigned waits until cluster-info carries a valid signature for the
// token (the bootstrapsigner controller adds it), then returns the
// server it names and the CA pins.
func waitSigned(ctx context.Context, client kubernetes.Interface, tok *bootstraptokenv1.BootstrapTokenString, o Options) (string, []string, error) {
	var server string
	var hashes []string
	var last error
	err := wait.PollUntilContextTimeout(ctx, o.Interval, o.SignedTimeout, true, func(ctx context.Context) (bool, error) {
		cm, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
		if err != nil {
			last = fmt.Errorf("reading kube-public/cluster-info: %w", err)
			return false, nil
		}
		kubeconfig := cm.Data[bootstrapapi.KubeConfigKey]
		sig, ok := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+tok.ID]
		if !ok {
			last = fmt.Errorf("cluster-info has no signature for token %s yet", tok.ID)
			return false, nil
		}
		if !jws.DetachedTokenIsValid(sig, kubeconfig, tok.ID, tok.Secret) {
			return false, fmt.Errorf("cluster-info's signature for token %s does not verify", tok.ID)
		}
		var caPEM []byte
		if server, caPEM, err = parseClusterInfo(kubeconfig); err != nil {
			return false, err
		}
		certs, err := certutil.ParseCertsPEM(caPEM)
		if err != nil {
			return false, fmt.Errorf("cluster-info's CA: %w", err)
		}
		for _, cert := range certs {
			hashes = append(hashes, pubkeypin.Hash(cert))
		}
		if len(hashes) == 0 {
			return false, errors.New("cluster-info holds no CA certificate")
		}
		return true, nil
	})
	if err != nil {
		if last != nil {
			err = last
		}
		return "", nil, fmt.Errorf("%w after %s: is the bootstrapsigner controller running? (kube-controller-manager --controllers=*,bootstrapsigner,tokencleaner; `joiner doctor` checks)", err, o.SignedTimeout)
	}
	return server, hashes, nil
}

// parseClusterInfo returns the server and CA of cluster-info's kubeconfig
// (its first cluster, as kubeadm reads it).
func parseClusterInfo(kubeconfig string) (server string, caPEM []byte, err error) {
	kc, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		return "", nil, fmt.Errorf("cluster-info holds no valid kubeconfig: %w", err)
	}
	for _, c := range kc.Clusters {
		return c.Server, c.CertificateAuthorityData, nil
	}
	return "", nil, errors.New("cluster-info's kubeconfig names no cluster")
}

// ClusterInfoServer is the API server URL kube-public/cluster-info names,
// read with the admin client: the server a node's TLS bootstrap connects
// to (kind: https://kind-control-plane:6443).
func ClusterInfoServer(ctx context.Context, client kubernetes.Interface) (string, error) {
	cm, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading kube-public/cluster-info: %w", err)
	}
	server, _, err := parseClusterInfo(cm.Data[bootstrapapi.KubeConfigKey])
	return server, err
}

// noToken ends an error about the seed's content before a token is made.
const noToken = "\nno token was made (a seed disc or seed file carries the endpoint, token, CA pins, node name, labels, taints, " +
	"timeouts and hosts entries giving the API server's address to its own names; give the other settings to the image, or write them with --output " +
	"and pass that file to the joiner with --config)"

// CheckSeed refuses a configuration the joiner would refuse from a seed,
// disc or file (config.SeedKeys): such a seed is no use, so say so before
// a token is made, not at the node's first boot. flag names the output
// that would carry it. Host names only the cluster's cluster-info can
// allow are left to CheckSeedHostnames.
func CheckSeed(flag string, cfg *config.Config) error {
	_, err := asSeed(flag, cfg)
	return err
}

// CheckSeedHostnames refuses, before a token is made, a seed whose
// extraHosts give the API server's address a name the joiner would refuse
// once discovery has verified cluster-info: any name but the host name of
// the server cluster-info names (the image's own names are the node's to
// accept). It reads cluster-info only when the seed has such names.
func CheckSeedHostnames(ctx context.Context, client kubernetes.Interface, flag string, cfg *config.Config) error {
	seed, err := asSeed(flag, cfg)
	if err != nil || len(seed.HeldSeedHostnames()) == 0 {
		return err
	}
	server, err := ClusterInfoServer(ctx, client)
	if err != nil {
		return fmt.Errorf("%s: extraHosts: checking the names against the API server cluster-info names: %w", flag, err)
	}
	if err := seed.CheckSeedHostnames(server); err != nil {
		return fmt.Errorf("%w%s", err, noToken)
	}
	return nil
}

func asSeed(flag string, cfg *config.Config) (*config.Config, error) {
	data, err := cfg.Marshal()
	if err != nil {
		return nil, err
	}
	seed := config.New()
	if err := seed.MergeSeed(flag, data); err != nil {
		return nil, fmt.Errorf("%w%s", err, noToken)
	}
	return seed, nil
}

// WriteSeed writes cfg as joiner.yaml on an ISO 9660 disc labelled
// config.SeedLabel, which the joiner finds at first boot.
func WriteSeed(path string, cfg *config.Config) error {
	data, err := cfg.Marshal()
	if err != nil {
		return err
	}
	if err := CheckSeed(path, cfg); err != nil {
		return err
	}
	return autounattend.WriteISOFile(path, autounattend.Disc{
		Label: config.SeedLabel,
		Files: []autounattend.File{{Name: config.FileName, Data: data}},
	})
}

// CreateMany makes the join configurations of several nodes, one per name
// (its nodeName): with shared, one token serves them all; otherwise each
// node gets a token of its own, described as the node's. Every
// configuration carries o.Node's other settings.
func CreateMany(ctx context.Context, client kubernetes.Interface, o Options, names []string, shared bool) ([]*config.Config, error) {
	if len(names) == 0 {
		return nil, errors.New("no node names")
	}
	if err := CheckTTL(o.TTL, shared); err != nil {
		return nil, err
	}
	clone := func(c *config.Config, name string) (*config.Config, error) {
		if c == nil {
			c = config.New()
		}
		data, err := c.Marshal()
		if err != nil {
			return nil, err
		}
		out := config.New()
		if err := out.Merge("--node-name", data); err != nil {
			return nil, err
		}
		out.NodeName = name
		return out, nil
	}
	out := make([]*config.Config, 0, len(names))
	if shared {
		cfg, err := Create(ctx, client, o)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			c, err := clone(cfg, name)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	var made []string
	for _, name := range names {
		node, err := clone(o.Node, name)
		if err != nil {
			return nil, err
		}
		each := o
		each.Node = node
		each.Description = fmt.Sprintf("%s: node %s", o.Description, name)
		cfg, err := Create(ctx, client, each)
		if err != nil {
			if len(made) > 0 {
				err = fmt.Errorf("%w\nthe tokens already made for %v stay until their ttl ends; delete them with `kubeadm token delete <id>` or let them expire", err, made)
			}
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		made = append(made, name)
		out = append(out, cfg)
	}
	return out, nil
}
