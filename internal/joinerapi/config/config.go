// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package config is the joiner's configuration: what a node needs to join a
// kubeadm cluster (where the API server is, the bootstrap token, the pinned
// CA) and how it should be registered (name, labels, taints, kubelet args).
//
// A node's configuration is assembled from layers, later ones winning key by
// key: the file kubenode-bake put in the image, the file on the join seed
// disc attached at first boot, then command-line flags. Maps (labels) merge
// key by key; lists are replaced by a later layer that sets them.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"
	"sigs.k8s.io/yaml"
)

const (
	// APIVersion and Kind identify a joiner configuration file.
	APIVersion = "joiner.kubenode.io/v1alpha1"
	Kind       = "JoinerConfiguration"

	// FileName is the configuration's file name, in the image and on the
	// join seed disc.
	FileName = "joiner.yaml"
	// SeedLabel is the volume label of the join seed disc the joiner looks
	// for at first boot (`joiner token --seed-iso` writes such a disc).
	SeedLabel = "KUBENODE_JOIN"
)

// Config is a JoinerConfiguration. Its YAML keys follow kubeadm's
// JoinConfiguration where the meaning is the same.
type Config struct {
	metav1.TypeMeta `json:",inline"`

	// APIServerEndpoint is host:port of the API server to discover the
	// cluster from, as reachable from the node (a QEMU user-net guest
	// reaches the build host as 10.0.2.2).
	APIServerEndpoint string `json:"apiServerEndpoint,omitempty"`
	// Token is the bootstrap token (abcdef.0123456789abcdef). It is removed
	// from every file the joiner can write once the node has joined.
	Token string `json:"token,omitempty"`
	// CACertHashes pin the cluster CA: "sha256:<hex of the CA's public key
	// info>", as `kubeadm token create --print-join-command` prints.
	CACertHashes []string `json:"caCertHashes,omitempty"`
	// UnsafeSkipCAVerification joins without pinning the CA: anyone who can
	// answer on APIServerEndpoint can then take the node. Never the default.
	UnsafeSkipCAVerification bool `json:"unsafeSkipCAVerification,omitempty"`

	// NodeName defaults to the lowercased host name.
	NodeName string `json:"nodeName,omitempty"`
	// Labels are set by the kubelet at registration (--node-labels) and
	// ensured on the Node after it is Ready. Only labels a kubelet may set
	// on its own Node are accepted (NodeRestriction).
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are registered with the node (kubeadm nodeRegistration.taints).
	Taints []corev1.Taint `json:"taints,omitempty"`
	// ExtraHosts are written to the hosts file once discovery has verified
	// the cluster, e.g. a control-plane name the API server certificate and
	// cluster-info use; discovery itself resolves apiServerEndpoint's host
	// with them.
	ExtraHosts []corev1.HostAlias `json:"extraHosts,omitempty"`
	// CRISocket is the container runtime endpoint.
	CRISocket string `json:"criSocket,omitempty"`
	// KubeletExtraArgs are passed to the kubelet through kubeadm.
	KubeletExtraArgs []kubeadmv1.Arg `json:"kubeletExtraArgs,omitempty"`
	// IgnorePreflightErrors are kubeadm preflight check names to downgrade
	// to warnings; "Swap" also skips the joiner's own swap check.
	IgnorePreflightErrors []string `json:"ignorePreflightErrors,omitempty"`
	// KubeadmPath and KubeletPath default to the binaries on PATH.
	KubeadmPath string `json:"kubeadmPath,omitempty"`
	KubeletPath string `json:"kubeletPath,omitempty"`

	Timeouts Timeouts `json:"timeouts,omitempty"`

	// held are seed host names only CheckSeedHostnames can accept.
	held []SeedHostname
}

// Timeouts bound each wait of a join.
type Timeouts struct {
	// Seed: how long to wait for the join seed disc to appear.
	Seed *metav1.Duration `json:"seed,omitempty"`
	// Discovery: how long to retry reaching the API server and finding the
	// token's signature on cluster-info.
	Discovery *metav1.Duration `json:"discovery,omitempty"`
	// TLSBootstrap: kubeadm's wait for the kubelet's client certificate.
	TLSBootstrap *metav1.Duration `json:"tlsBootstrap,omitempty"`
	// NodeReady: how long to wait for the Node to be Ready after joining.
	NodeReady *metav1.Duration `json:"nodeReady,omitempty"`
}

// Default timeouts.
const (
	DefaultSeedTimeout         = 2 * time.Minute
	DefaultDiscoveryTimeout    = 5 * time.Minute
	DefaultTLSBootstrapTimeout = 5 * time.Minute
	DefaultNodeReadyTimeout    = 5 * time.Minute
)

// New returns an empty configuration with its type set.
func New() *Config {
	return &Config{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}}
}

// Merge decodes one more layer of YAML over c: keys present in data
// replace c's, labels merge key by key. Unknown keys are an error, naming
// the source.
func (c *Config) Merge(source string, data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var head metav1.TypeMeta
	if err := yaml.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	if head.APIVersion != "" && head.APIVersion != APIVersion || head.Kind != "" && head.Kind != Kind {
		return fmt.Errorf("%s: is %s %s, want apiVersion %s, kind %s", source, head.APIVersion, head.Kind, APIVersion, Kind)
	}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	c.TypeMeta = metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}
	// A later layer's extraHosts replace a seed's: its held names are gone.
	var keys map[string]any
	if err := yaml.Unmarshal(data, &keys); err == nil {
		if _, ok := keys["extraHosts"]; ok {
			c.held = nil
		}
	}
	return nil
}

// MaxFileSize bounds a configuration file, on disk or on a seed disc; a
// real one is a few hundred bytes.
const MaxFileSize = 64 << 10

// ErrTooLarge is returned for a configuration larger than MaxFileSize.
var ErrTooLarge = fmt.Errorf("larger than %d bytes", MaxFileSize)

// MergeFile merges the file at path; a missing file is reported as such.
func (c *Config) MergeFile(path string) error {
	data, err := ReadFile(path)
	if err != nil {
		return err
	}
	return c.Merge(path, data)
}

// ReadFile reads a configuration file of at most MaxFileSize bytes.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: %w", path, ErrTooLarge)
	}
	return data, nil
}

// SeedKeys are the keys a join seed disc may set: where and how to join
// (endpoint, token, CA pins), how the Node registers (name, labels, which
// the API server's NodeRestriction limits anyway, taints), kubeadm checks
// to downgrade to warnings, how long to wait, and hosts entries giving the
// API server's own names its address. Everything else decides what runs as
// root or SYSTEM on the node (kubeadmPath, kubeletPath, kubeletExtraArgs,
// criSocket) or what the node trusts (unsafeSkipCAVerification, hosts
// entries sending names elsewhere): only the image or root may set it.
var SeedKeys = []string{"apiVersion", "kind", "apiServerEndpoint", "token", "caCertHashes", "nodeName",
	"labels", "taints", "extraHosts", "ignorePreflightErrors", "timeouts"}

// ErrImageOnly marks a seed that sets a key only the image may set.
var ErrImageOnly = errors.New("only the image may set it")

// MergeSeed merges the configuration of a join seed disc, which anyone who
// can attach a disc to the machine can write: it may set SeedKeys only;
// when the image pins the cluster CA (caCertHashes), the seed's pins must
// be among the image's; and its extraHosts may only give the address of
// apiServerEndpoint to the API server's own names: the names the image
// uses for it (its apiServerEndpoint's host name, its own extraHosts), or
// the host name of the server URL in the cluster's cluster-info. Only
// discovery learns the latter, so a seed's other names are held
// (HeldSeedHostnames) and CheckSeedHostnames must accept them before the
// hosts file is written. Every problem is reported, naming its key.
func (c *Config) MergeSeed(source string, data []byte) error {
	if len(data) > MaxFileSize {
		return fmt.Errorf("%s: %w", source, ErrTooLarge)
	}
	var keys map[string]any
	if err := yaml.Unmarshal(data, &keys); err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	var errs []error
	for _, k := range sortedKeys(keys) {
		if !slices.Contains(SeedKeys, k) {
			errs = append(errs, fmt.Errorf("%s: %s: a join seed disc may not set it, %w: set it in the image "+
				"(kubenode-bake's options, or the image's %s) or pass it with --config as root", source, k, ErrImageOnly, FileName))
		}
	}
	seed := New()
	if err := seed.Merge(source, data); err != nil {
		return errors.Join(append(errs, err)...)
	}
	if len(c.CACertHashes) > 0 {
		for _, h := range seed.CACertHashes {
			if !slices.ContainsFunc(c.CACertHashes, func(pin string) bool { return strings.EqualFold(pin, h) }) {
				errs = append(errs, fmt.Errorf("%s: caCertHashes: %s is not among the CA pins the image holds (%s), %w: "+
					"make the seed for the cluster the image was built for, or pass --config as root", source, h, strings.Join(c.CACertHashes, ", "), ErrImageOnly))
			}
		}
	}
	endpoint := orDefault(seed.APIServerEndpoint, c.APIServerEndpoint)
	host, _, _ := net.SplitHostPort(endpoint)
	names := c.seedHostnames()
	var held []SeedHostname
	for i, h := range seed.ExtraHosts {
		if host == "" || net.ParseIP(host) == nil || !net.ParseIP(host).Equal(net.ParseIP(h.IP)) {
			errs = append(errs, fmt.Errorf("%s: extraHosts[%d]: %s is not the API server's address (apiServerEndpoint %s): "+
				"a join seed disc may only add names for that address, %w for others: "+imageHosts,
				source, i, h.IP, endpoint, ErrImageOnly))
		}
		// The address alone proves nothing: a seed that also sets
		// apiServerEndpoint chooses it, and could give it any name
		// (registry.k8s.io). Only the API server's own names may point
		// there: the image's, or the one cluster-info gives it, which
		// CheckSeedHostnames compares once discovery has verified it.
		for j, name := range h.Hostnames {
			if !slices.Contains(names, strings.ToLower(name)) {
				held = append(held, SeedHostname{Source: source, Entry: i, Index: j, Name: name, imageNames: names})
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := c.Merge(source, data); err != nil {
		return err
	}
	c.held = append(c.held, held...)
	return nil
}

// imageHosts says where hosts entries a seed may not carry go.
const imageHosts = "write them into the image's " + FileName + " (a provisioner after kubenode-bake can) or pass --config as root"

// SeedHostname is a host name a join seed gave the API server's address
// that the image does not use for its API server: extraHosts[Entry].hostnames[Index]
// of the seed read from Source.
type SeedHostname struct {
	Source       string
	Entry, Index int
	Name         string
	imageNames   []string // the names the image uses for its API server
}

// HeldSeedHostnames are the host names MergeSeed took from a seed that
// only CheckSeedHostnames can accept.
func (c *Config) HeldSeedHostnames() []SeedHostname { return slices.Clone(c.held) }

// CheckSeedHostnames accepts the held seed host names (HeldSeedHostnames)
// that are exactly the host name of server, the API server URL in the
// cluster's kube-public/cluster-info, and refuses every other one, naming
// its key. The joiner calls it once discovery has checked that
// cluster-info against the CA pin, so the name is the one the cluster the
// node joins uses for its API server (kind's kind-control-plane, which
// kubeadm's TLS bootstrap connects to), and the seed still cannot point
// any other name anywhere. Without a CA pin (unsafeSkipCAVerification)
// whoever answers on apiServerEndpoint writes cluster-info, so no held
// name is accepted.
func (c *Config) CheckSeedHostnames(server string) error {
	want := ""
	if u, err := url.Parse(server); err == nil && net.ParseIP(u.Hostname()) == nil {
		want = strings.ToLower(u.Hostname())
	}
	var errs []error
	for _, h := range c.held {
		if want != "" && strings.ToLower(h.Name) == want && !c.UnsafeSkipCAVerification {
			continue
		}
		allowed := "none: the image names its API server by no host name"
		if len(h.imageNames) > 0 {
			allowed = strings.Join(h.imageNames, ", ")
		}
		clusterInfo := want
		switch {
		case c.UnsafeSkipCAVerification:
			clusterInfo = "none: unsafeSkipCAVerification is set, so cluster-info was not verified"
		case server == "":
			clusterInfo = "none: cluster-info was not read"
		case want == "":
			clusterInfo = "none: it names the API server " + server
		}
		errs = append(errs, fmt.Errorf("%s: extraHosts[%d].hostnames[%d]: %q is neither the host name of the image's apiServerEndpoint nor a name the image's extraHosts lists (%s) "+
			"nor the host name of the API server in the cluster's cluster-info verified against the CA pin (%s): "+
			"a join seed disc may only give the API server's own name its address, %w for other names: "+imageHosts,
			h.Source, h.Entry, h.Index, h.Name, allowed, clusterInfo, ErrImageOnly))
	}
	return errors.Join(errs...)
}

// seedHostnames are the host names a join seed disc may give an address
// (lowercased): the host name of the image's apiServerEndpoint and the
// names the image's extraHosts list.
func (c *Config) seedHostnames() []string {
	var names []string
	if host, _, err := net.SplitHostPort(c.APIServerEndpoint); err == nil && host != "" && net.ParseIP(host) == nil {
		names = append(names, strings.ToLower(host))
	}
	for _, h := range c.ExtraHosts {
		for _, name := range h.Hostnames {
			if n := strings.ToLower(name); !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// SetDefaults fills what the user left out. hostname is the machine's.
func (c *Config) SetDefaults(hostname, criSocket string) {
	if c.NodeName == "" {
		c.NodeName = strings.ToLower(hostname)
	}
	if c.CRISocket == "" {
		c.CRISocket = criSocket
	}
	setDuration(&c.Timeouts.Seed, DefaultSeedTimeout)
	setDuration(&c.Timeouts.Discovery, DefaultDiscoveryTimeout)
	setDuration(&c.Timeouts.TLSBootstrap, DefaultTLSBootstrapTimeout)
	setDuration(&c.Timeouts.NodeReady, DefaultNodeReadyTimeout)
}

func setDuration(d **metav1.Duration, def time.Duration) {
	if *d == nil {
		*d = &metav1.Duration{Duration: def}
	}
}

// Validate reports every problem at once, each under its YAML key.
func (c *Config) Validate() error { return c.validate(true) }

// ValidateNode validates all but the join credentials (endpoint, token, CA
// pins), which a node that has joined no longer holds.
func (c *Config) ValidateNode() error { return c.validate(false) }

func (c *Config) validate(credentials bool) error {
	var errs field.ErrorList
	root := field.NewPath("")
	key := func(name string) *field.Path { return root.Child(name) }
	if credentials {
		errs = c.validateCredentials(key)
	}

	if c.NodeName == "" {
		errs = append(errs, field.Required(key("nodeName"), "the host name is empty"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(c.NodeName) {
		errs = append(errs, field.Invalid(key("nodeName"), c.NodeName, msg))
	}
	errs = append(errs, validateLabels(c.Labels, key("labels"))...)
	errs = append(errs, validateTaints(c.Taints, key("taints"))...)
	for i, h := range c.ExtraHosts {
		p := key("extraHosts").Index(i)
		if net.ParseIP(h.IP) == nil {
			errs = append(errs, field.Invalid(p.Child("ip"), h.IP, "must be an IP address"))
		}
		if len(h.Hostnames) == 0 {
			errs = append(errs, field.Required(p.Child("hostnames"), "at least one host name"))
		}
		for j, name := range h.Hostnames {
			for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
				errs = append(errs, field.Invalid(p.Child("hostnames").Index(j), name, msg))
			}
		}
	}
	if u, err := url.Parse(c.CRISocket); err != nil || (u.Scheme != "unix" && u.Scheme != "npipe") {
		errs = append(errs, field.Invalid(key("criSocket"), c.CRISocket, "must be a unix:// or npipe:// URL"))
	}
	for i, a := range c.KubeletExtraArgs {
		p := key("kubeletExtraArgs").Index(i)
		if msg := CheckKubeletArgName(a.Name); msg != "" {
			errs = append(errs, field.Invalid(p.Child("name"), a.Name, msg))
		}
		if msg := ForbiddenKubeletArg(a.Name); msg != "" {
			errs = append(errs, field.Forbidden(p.Child("name"), msg))
		}
		if msg := CheckKubeletArgValue(a.Name, a.Value); msg != "" {
			errs = append(errs, field.Invalid(p.Child("value"), a.Value, msg))
		}
	}
	for name, d := range map[string]*metav1.Duration{"seed": c.Timeouts.Seed, "discovery": c.Timeouts.Discovery,
		"tlsBootstrap": c.Timeouts.TLSBootstrap, "nodeReady": c.Timeouts.NodeReady} {
		if d != nil && d.Duration <= 0 {
			errs = append(errs, field.Invalid(key("timeouts").Child(name), d.Duration.String(), "must be positive"))
		}
	}
	slices.SortStableFunc(errs, func(a, b *field.Error) int { return strings.Compare(a.Field, b.Field) })
	return errs.ToAggregate()
}

func (c *Config) validateCredentials(key func(string) *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.APIServerEndpoint == "" {
		errs = append(errs, field.Required(key("apiServerEndpoint"), "host:port of the API server, e.g. 10.0.2.2:6443"))
	} else if msg := checkHostPort(c.APIServerEndpoint); msg != "" {
		errs = append(errs, field.Invalid(key("apiServerEndpoint"), c.APIServerEndpoint, msg))
	}
	switch {
	case c.Token == "":
		errs = append(errs, field.Required(key("token"), "a bootstrap token (`joiner token` or `kubeadm token create` makes one)"))
	case !bootstraputil.IsValidBootstrapToken(c.Token):
		errs = append(errs, field.Invalid(key("token"), "<redacted>", "must be of the form [a-z0-9]{6}.[a-z0-9]{16}"))
	}
	if len(c.CACertHashes) == 0 && !c.UnsafeSkipCAVerification {
		errs = append(errs, field.Required(key("caCertHashes"),
			"pin the cluster CA (sha256:<hex>, printed by `joiner token`); unsafeSkipCAVerification: true joins without it, insecurely"))
	}
	for i, h := range c.CACertHashes {
		if err := pubkeypin.NewSet().Allow(h); err != nil {
			errs = append(errs, field.Invalid(key("caCertHashes").Index(i), h, err.Error()))
		}
	}
	return errs
}

func checkHostPort(hp string) string {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return "must be host:port (" + err.Error() + ")"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "port must be 1-65535"
	}
	if net.ParseIP(host) == nil {
		if msgs := validation.IsDNS1123Subdomain(strings.ToLower(host)); len(msgs) > 0 {
			return "host: " + msgs[0]
		}
	}
	return ""
}

func validateLabels(labels map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(labels) {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p.Key(k), k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(labels[k]) {
			errs = append(errs, field.Invalid(p.Key(k), labels[k], msg))
		}
		if msg := ForbiddenLabel(k); msg != "" {
			errs = append(errs, field.Forbidden(p.Key(k), msg))
		}
	}
	return errs
}

// CheckLabel says why the kubelet cannot register its Node with the label
// key=value, one message per problem; nil when it can. kubenode-bake checks
// node_labels with it.
func CheckLabel(key, value string) []string {
	msgs := validation.IsQualifiedName(key)
	msgs = append(msgs, validation.IsValidLabelValue(value)...)
	if msg := ForbiddenLabel(key); msg != "" {
		msgs = append(msgs, msg)
	}
	return msgs
}

// ForbiddenLabel says why a kubelet may not set the label key on its own
// Node (NodeRestriction), or "".
func ForbiddenLabel(key string) string {
	if inKubernetesNamespace(key) && !kubeletapis.IsKubeletLabel(key) {
		return "the NodeRestriction admission plugin forbids a kubelet to set labels in the kubernetes.io and k8s.io namespaces " +
			"(node-role.kubernetes.io/, node-restriction.kubernetes.io/, ...) except the well-known ones; " +
			"use your own prefix (e.g. example.com/role) or label the node with an admin credential"
	}
	return ""
}

// CheckKubeletArgName says why name is not a kubelet flag name the joiner
// passes on, or "".
func CheckKubeletArgName(name string) string {
	if name == "" || strings.HasPrefix(name, "-") {
		return "a flag name without leading dashes"
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Sprintf("a flag name is letters, digits, '-', '_' and '.', not %q", r)
		}
	}
	return ""
}

// ForbiddenKubeletArg says why the joiner refuses the kubelet flag name
// (it sets it itself from other keys), or "".
func ForbiddenKubeletArg(name string) string {
	if name == "node-labels" || name == "register-with-taints" {
		return "use labels / taints instead of " + name
	}
	return ""
}

// CheckKubeletArgValue says why value cannot be the value of the kubelet
// flag --name, or "". A kubelet flag reaches the kubelet through command
// lines that are split on whitespace and read quotes and backslashes:
// systemd's KUBELET_KUBEADM_ARGS and KUBELET_EXTRA_ARGS on Linux, the
// service's command line on Windows. A value with such characters would
// become other flags ("2 --register-node=false" is two), so it is refused;
// Windows paths can be written with forward slashes (C:/var/lib/kubelet).
func CheckKubeletArgValue(name, value string) string {
	for _, r := range value {
		switch {
		case unicode.IsSpace(r):
			return fmt.Sprintf("the value of --%s contains whitespace, which would split it into more arguments", name)
		case unicode.IsControl(r) || r == '\uFFFE' || r == '\uFFFF':
			return fmt.Sprintf("the value of --%s contains a control character", name)
		case strings.ContainsRune("\"'`\\", r):
			return fmt.Sprintf("the value of --%s contains %q, which a service command line reads as quoting or an escape (write Windows paths with /)", name, r)
		}
	}
	return ""
}

// inKubernetesNamespace: labels under kubernetes.io and k8s.io are
// reserved; the kubelet may only set the well-known ones among them.
func inKubernetesNamespace(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, reserved := range []string{"kubernetes.io", "k8s.io"} {
		if ns == reserved || strings.HasSuffix(ns, "."+reserved) {
			return true
		}
	}
	return false
}

func validateTaints(taints []corev1.Taint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	effects := []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}
	for i, t := range taints {
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(p.Index(i).Child("key"), t.Key, msg))
		}
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(p.Index(i).Child("value"), t.Value, msg))
		}
		if !slices.Contains(effects, string(t.Effect)) {
			errs = append(errs, field.NotSupported(p.Index(i).Child("effect"), t.Effect, effects))
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// KubeletFlags are the kubelet flags this configuration asks for: the
// Node's name, labels and taints to register with, then kubeletExtraArgs.
// The joiner gives them to the kubelet at its first start and, on Windows,
// to the kubelet service's command line after kubeadm join (after
// kubeadm's, so these win).
func (c *Config) KubeletFlags() []string {
	flags := []string{"--hostname-override=" + c.NodeName}
	if labels := LabelList(c.Labels); labels != "" {
		flags = append(flags, "--node-labels="+labels)
	}
	if len(c.Taints) > 0 {
		var ts []string
		for _, t := range c.Taints {
			ts = append(ts, t.ToString())
		}
		flags = append(flags, "--register-with-taints="+strings.Join(ts, ","))
	}
	for _, a := range c.KubeletExtraArgs {
		flags = append(flags, "--"+a.Name+"="+a.Value)
	}
	return flags
}

// LabelList is labels as --node-labels takes them: key=value, sorted,
// comma-separated.
func LabelList(labels map[string]string) string {
	var parts []string
	for k, v := range labels {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// Marshal renders c as YAML.
func (c *Config) Marshal() ([]byte, error) {
	c.TypeMeta = metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}
	return yaml.Marshal(c)
}

// WriteFile writes c to path with mode 0600 (it may hold a token), through
// a temporary file and a rename so a reader never sees half a file.
func (c *Config) WriteFile(path string) error {
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, data, 0o600)
}

// WriteFileAtomic writes data to path via a temporary file in the same
// directory, created with mode perm.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Redacted returns a copy safe to print: the token's secret half is hidden.
func (c *Config) Redacted() *Config {
	r := *c
	if id, _, ok := strings.Cut(c.Token, "."); ok {
		r.Token = id + ".<redacted>"
	}
	return &r
}
