// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Command joiner brings a kubenode image into a kubeadm cluster on its first
// boot (`joiner join`), and prepares the cluster side (`joiner token`,
// `joiner doctor`). See docs/joiner.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/doctor"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/join"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/skew"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/token"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/version"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
)

const usage = `joiner joins a machine to a kubeadm cluster on its first boot.

Usage:
  joiner join   [flags]   on the node: join this machine (its first-boot service runs this)
  joiner token  [flags]   on the control-plane side: make a bootstrap token and the node's join config or seed disc
  joiner doctor [flags]   on the control-plane side: is the cluster ready for a Linux or Windows node?
  joiner version

Run "joiner <command> --help" for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "join":
		err = runJoin(ctx, args[1:], stderr)
	case "token":
		err = runToken(ctx, args[1:], stdout, stderr)
	case "doctor":
		err = runDoctor(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "joiner", version.PluginVersion.FormattedVersion())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "joiner: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(stderr, "joiner %s: %v\n", args[0], err)
		return 1
	}
}

// errUsage: the flags were wrong; the flag package has said so.
var errUsage = errors.New("usage")

func parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return errUsage
	}
	return nil
}

// nodeFlags are the join-configuration flags `join` and `token` share.
type nodeFlags struct {
	endpoint, tokenValue, nodeName, criSocket string
	caHashes, labels, taints, hosts, args     multi
	ignore                                    multi
	unsafeSkipCA                              bool
	discoveryTimeout, readyTimeout            time.Duration
}

func (n *nodeFlags) register(fs *flag.FlagSet, withToken bool) {
	fs.StringVar(&n.endpoint, "api-server-endpoint", "", "`host:port` of the API server, as the node reaches it")
	if withToken {
		fs.StringVar(&n.tokenValue, "token", "", "bootstrap `token` (abcdef.0123456789abcdef)")
		fs.Var(&n.caHashes, "discovery-token-ca-cert-hash", "`sha256:<hex>` pin of the cluster CA (repeatable)")
		fs.BoolVar(&n.unsafeSkipCA, "discovery-token-unsafe-skip-ca-verification", false, "join without pinning the CA (insecure)")
	}
	fs.StringVar(&n.nodeName, "node-name", "", "Node `name` (default: the lowercased host name)")
	fs.StringVar(&n.criSocket, "cri-socket", "", "container runtime `endpoint`")
	fs.Var(&n.labels, "label", "node label `key=value` (repeatable)")
	fs.Var(&n.taints, "taint", "node taint `key[=value]:Effect` (repeatable)")
	fs.Var(&n.hosts, "extra-host", "hosts entry `name=ip` written before joining (repeatable)")
	fs.Var(&n.args, "kubelet-arg", "extra kubelet flag `name=value` (repeatable)")
	fs.Var(&n.ignore, "ignore-preflight-errors", "kubeadm preflight `checks` to ignore (comma-separated, repeatable)")
	fs.DurationVar(&n.discoveryTimeout, "discovery-timeout", 0, "how long to retry discovery (default 5m)")
	fs.DurationVar(&n.readyTimeout, "node-ready-timeout", 0, "how long to wait for Node Ready (default 5m)")
}

// config turns the flags that were given into a configuration layer.
func (n *nodeFlags) config() (*config.Config, error) {
	c := config.New()
	c.APIServerEndpoint, c.Token, c.NodeName, c.CRISocket = n.endpoint, n.tokenValue, n.nodeName, n.criSocket
	c.CACertHashes, c.UnsafeSkipCAVerification, c.IgnorePreflightErrors = n.caHashes, n.unsafeSkipCA, n.ignore.split()
	for _, kv := range n.labels {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--label %q: want key=value", kv)
		}
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[k] = v
	}
	for _, s := range n.taints {
		t, err := parseTaint(s)
		if err != nil {
			return nil, fmt.Errorf("--taint %q: %w", s, err)
		}
		c.Taints = append(c.Taints, t)
	}
	for _, s := range n.hosts {
		name, ip, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("--extra-host %q: want name=ip", s)
		}
		c.ExtraHosts = append(c.ExtraHosts, corev1.HostAlias{IP: ip, Hostnames: []string{name}})
	}
	for _, s := range n.args {
		name, value, _ := strings.Cut(s, "=")
		c.KubeletExtraArgs = append(c.KubeletExtraArgs, kubeadmv1.Arg{Name: strings.TrimLeft(name, "-"), Value: value})
	}
	c.Timeouts.Discovery = duration(n.discoveryTimeout)
	c.Timeouts.NodeReady = duration(n.readyTimeout)
	return c, nil
}

func parseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return corev1.Taint{}, errors.New("want key[=value]:Effect")
	}
	k, v, _ := strings.Cut(kv, "=")
	return corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)}, nil
}

func runJoin(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("joiner join", flag.ContinueOnError)
	paths := config.DefaultPaths()
	var nf nodeFlags
	var configFile string
	var service bool
	fs.StringVar(&configFile, "config", "", "join configuration `file` (default: "+paths.Config+" merged with the join seed disc labelled "+config.SeedLabel+")")
	fs.StringVar(&paths.Log, "log-file", paths.Log, "also log to this `file`")
	fs.BoolVar(&service, "windows-service", false, "run under the Windows service control manager (the first-boot service)")
	nf.register(fs, true)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: joiner join [flags]\n\nJoins this machine to the cluster with kubeadm, waits for its Node to be Ready,\nthen removes the token from disk. Running it again on a joined node changes nothing.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	overrides, err := nf.config()
	if err != nil {
		return err
	}
	do := func(ctx context.Context) error {
		logw := stderr
		if paths.Log != "" {
			if err := os.MkdirAll(filepath.Dir(paths.Log), 0o755); err == nil {
				if f, err := os.OpenFile(paths.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
					defer f.Close()
					logw = io.MultiWriter(stderr, timestamped{f})
				}
			}
		}
		err := join.Run(ctx, join.Options{ConfigFile: configFile, Overrides: overrides, Paths: paths, Log: logw})
		if err != nil {
			fmt.Fprintf(logw, "joiner join failed: %v\n", err)
		}
		return err
	}
	if service {
		return runAsService(do)
	}
	return do(ctx)
}

// timestamped prefixes each write (a line of progress) with the time.
type timestamped struct{ w io.Writer }

func (t timestamped) Write(p []byte) (int, error) {
	if _, err := fmt.Fprintf(t.w, "%s %s", time.Now().UTC().Format(time.RFC3339), p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func adminClients(kubeconfig string) (kubernetes.Interface, dynamic.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("loading the admin kubeconfig (--kubeconfig or $KUBECONFIG): %w", err)
	}
	rc.Timeout = 15 * time.Second
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	d, err := dynamic.NewForConfig(rc)
	return c, d, err
}

func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("joiner token", flag.ContinueOnError)
	var nf nodeFlags
	var kubeconfig, out, seed, description, manifest, outDir, format string
	var ttl, signed time.Duration
	var count int
	var shared bool
	usages := multi(token.DefaultUsages)
	groups := multi(token.DefaultGroups)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "admin kubeconfig `file` (default: $KUBECONFIG, ~/.kube/config)")
	fs.DurationVar(&ttl, "ttl", 24*time.Hour, "token lifetime (0: never expires, refused with --shared-token)")
	fs.Var(&usages, "usages", "token `usages` (comma-separated)")
	fs.Var(&groups, "groups", "extra `groups` the token authenticates as (comma-separated)")
	fs.StringVar(&description, "description", "kubenode joiner", "token description")
	fs.StringVar(&out, "output", "", "write the node's join configuration to this `file` (mode 0600); - for stdout")
	fs.StringVar(&seed, "seed-iso", "", "write a join seed disc (ISO, label "+config.SeedLabel+") to this `file`")
	fs.IntVar(&count, "count", 1, "make seeds for this many nodes, named <--node-name>-1 to <--node-name>-N, into --output-dir")
	fs.StringVar(&outDir, "output-dir", "", "write one seed per node into this `directory`, named after the node (<node>.iso or <node>.yaml, mode 0600)")
	fs.StringVar(&format, "format", "iso", "what --output-dir holds per node: iso (a join seed disc) or yaml (a join seed file, for cloud-init or your own tooling to write to "+config.SeedFileLinux+")")
	fs.BoolVar(&shared, "shared-token", false, "with --output-dir: one token for every node (it lives --ttl) instead of one per node")
	fs.DurationVar(&signed, "wait-signed", time.Minute, "how long to wait for cluster-info to be signed for the new token")
	fs.StringVar(&manifest, "image-manifest", "", imageManifestUsage)
	nf.register(fs, false)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: joiner token [flags]\n\nCreates a bootstrap token, pins the cluster CA from kube-public/cluster-info, and writes\nthe node's join configuration (--output) and/or a seed disc to attach to the VM (--seed-iso);\nor, with --output-dir, one seed per node for --count nodes.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if outDir == "" && out == "" && seed == "" {
		fmt.Fprintln(stderr, "give --output FILE and/or --seed-iso FILE, or --output-dir DIR")
		fs.Usage()
		return errUsage
	}
	names, err := seedNames(outDir, out, seed, format, nf.nodeName, count, shared)
	if err != nil {
		return err
	}
	if err := token.CheckTTL(ttl, shared); err != nil {
		return err
	}
	node, err := nf.config()
	if err != nil {
		return err
	}
	// Every seed, disc or file, is held to the same rules on the node:
	// refuse one it would refuse before any token is made.
	switch {
	case seed != "":
		err = token.CheckSeed("--seed-iso", node)
	case outDir != "":
		err = token.CheckSeed("--output-dir (--format "+format+")", node)
	}
	if err != nil {
		return err
	}
	image, err := readImageManifest(manifest)
	if err != nil {
		return err
	}
	client, _, err := adminClients(kubeconfig)
	if err != nil {
		return err
	}
	if err := checkImage(client, manifest, image, stderr); err != nil {
		return err
	}
	switch {
	case seed != "":
		err = token.CheckSeedHostnames(ctx, client, "--seed-iso", node)
	case outDir != "":
		err = token.CheckSeedHostnames(ctx, client, "--output-dir (--format "+format+")", node)
	}
	if err != nil {
		return err
	}
	opts := token.Options{
		TTL: ttl, Usages: usages.split(), Groups: groups.split(), Description: description,
		Node: node, SignedTimeout: signed, Log: stderr,
	}
	if outDir != "" {
		cfgs, err := token.CreateMany(ctx, client, opts, names, shared)
		if err != nil {
			return err
		}
		return writeSeeds(outDir, format, cfgs, stderr)
	}
	cfg, err := token.Create(ctx, client, opts)
	if err != nil {
		return err
	}
	if out == "-" {
		data, err := cfg.Marshal()
		if err != nil {
			return err
		}
		_, err = stdout.Write(data)
		return err
	}
	if out != "" {
		if err := cfg.WriteFile(out); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "[token] wrote %s\n", out)
	}
	if seed != "" {
		if err := token.WriteSeed(seed, cfg); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "[token] wrote seed disc %s (label %s): attach it to the node before its first boot\n", seed, config.SeedLabel)
	}
	return nil
}

// seedNames checks the flags that choose between one seed (--output,
// --seed-iso) and one per node (--output-dir), and returns the nodes'
// names for the latter: --node-name itself for one node, or
// <--node-name>-1 to -N for --count N.
func seedNames(outDir, out, seed, format, prefix string, count int, shared bool) ([]string, error) {
	if outDir == "" {
		switch {
		case format != "iso":
			return nil, fmt.Errorf("--format %s: give --output-dir DIR (--output writes YAML, --seed-iso a disc)", format)
		case count != 1:
			return nil, fmt.Errorf("--count %d: give --output-dir DIR for the seeds (one per node)", count)
		case shared:
			return nil, errors.New("--shared-token: give --output-dir DIR and --count N (one seed per node)")
		}
		return nil, nil
	}
	if out != "" || seed != "" {
		return nil, errors.New("--output-dir: give it instead of --output and --seed-iso, not with them")
	}
	if format != "iso" && format != "yaml" {
		return nil, fmt.Errorf("--format %q: want iso or yaml", format)
	}
	if count < 1 || count > maxSeeds {
		return nil, fmt.Errorf("--count %d: want 1 to %d", count, maxSeeds)
	}
	if prefix == "" {
		return nil, fmt.Errorf("--output-dir: give --node-name: a seed names its node (with --count %d, nodes are named <node-name>-1 to <node-name>-%d)", count, count)
	}
	names := []string{prefix}
	if count > 1 {
		names = names[:0]
		for i := 1; i <= count; i++ {
			names = append(names, fmt.Sprintf("%s-%d", prefix, i))
		}
	}
	for _, n := range names {
		if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
			return nil, fmt.Errorf("--node-name %q: node name %q: %s", prefix, n, strings.Join(msgs, "; "))
		}
	}
	return names, nil
}

// maxSeeds bounds --count: each per-node token is a Secret and a
// signature on cluster-info.
const maxSeeds = 1000

// writeSeeds writes each node's seed into dir as <node>.iso or <node>.yaml.
func writeSeeds(dir, format string, cfgs []*config.Config, log io.Writer) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	for _, cfg := range cfgs {
		path := filepath.Join(dir, cfg.NodeName+"."+format)
		var err error
		if format == "iso" {
			err = token.WriteSeed(path, cfg)
		} else {
			err = cfg.WriteFile(path)
		}
		if err != nil {
			return fmt.Errorf("--output-dir: node %s: %w", cfg.NodeName, err)
		}
	}
	what := "join seed discs (label " + config.SeedLabel + "): attach each to its node before its first boot"
	if format == "yaml" {
		what = "join seed files: place each on its node before its first boot, as " + config.SeedFileLinux + " (Windows: " + config.SeedFileWindows + ")"
	}
	fmt.Fprintf(log, "[token] wrote %d %s, into %s\n", len(cfgs), what, dir)
	return nil
}

const imageManifestUsage = "the image's kubenode-manifest.json `file` (kubenode-export writes it): refuse a cluster its kubelet and kubeadm cannot join"

// readImageManifest reads --image-manifest's baked.kubernetes; "" when the
// flag was not given.
func readImageManifest(path string) (string, error) {
	im, err := readImage(path)
	return im.Kubernetes, err
}

// readImage reads --image-manifest; the zero Image when the flag was not
// given.
func readImage(path string) (skew.Image, error) {
	if path == "" {
		return skew.Image{}, nil
	}
	im, err := skew.ReadImage(path)
	if err != nil {
		return skew.Image{}, fmt.Errorf("--image-manifest %s: %w", path, err)
	}
	return im, nil
}

// checkImage refuses a cluster the image (baked.kubernetes image, read from
// --image-manifest path) cannot join; it says nothing without the flag.
func checkImage(client kubernetes.Interface, path, image string, log io.Writer) error {
	if image == "" {
		return nil
	}
	server, err := client.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("--image-manifest: reading the API server's version to compare with the image's: %w", err)
	}
	if err := skew.CheckImage(image, server); err != nil {
		return fmt.Errorf("--image-manifest %s: %w\nno token was made: build the image with kubernetes_version at the control plane's minor (%s), or upgrade the control plane first", path, err, server.GitVersion)
	}
	fmt.Fprintf(log, "[token] the image's kubelet and kubeadm %s can join the %s control plane\n", image, server.GitVersion)
	return nil
}

func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("joiner doctor", flag.ContinueOnError)
	var kubeconfig, node, manifest string
	var nodeOS osFlag
	fs.StringVar(&kubeconfig, "kubeconfig", "", "admin kubeconfig `file` (default: $KUBECONFIG, ~/.kube/config)")
	fs.StringVar(&node, "node", "", "also explain this `node` (is it registered, why is it NotReady)")
	fs.Var(&nodeOS, "os", "the joining node's `os`, linux or windows (default: --image-manifest's os.family, else the OS doctor runs on, here "+hostOS+")")
	fs.StringVar(&manifest, "image-manifest", "", imageManifestUsage+"; its os.family is --os's default")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: joiner doctor [flags]\n\nChecks that the cluster can take a node of --os: the API server answers, cluster-info\nis signed, bootstrap RBAC, kubeadm's ConfigMaps, a leading kube-scheduler (its lease),\nwith --image-manifest the image's version skew; then for linux a CNI of any kind,\nfor windows kube-proxy and flannel or Calico set up for Windows.\nExits 1 when a check fails (warnings do not).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	image, err := readImage(manifest)
	if err != nil {
		return err
	}
	target, err := doctorOS(string(nodeOS), manifest, image.OS)
	if err != nil {
		return err
	}
	client, dyn, err := adminClients(kubeconfig)
	if err != nil {
		return err
	}
	if !doctor.Print(stdout, doctor.Run(ctx, client, dyn, doctor.Options{OS: target, Node: node, ImageKubernetes: image.Kubernetes})) {
		return errors.New("some checks failed; see the fixes above")
	}
	return nil
}

// osFlag is doctor's --os: linux or windows.
type osFlag string

func (o *osFlag) String() string { return string(*o) }

// Set refuses an OS doctor has no checks for.
func (o *osFlag) Set(v string) error {
	if v != doctor.Linux && v != doctor.Windows {
		return fmt.Errorf("want %s or %s", doctor.Linux, doctor.Windows)
	}
	*o = osFlag(v)
	return nil
}

// doctorOS is the OS doctor checks for: --os (given), which must agree
// with the image manifest's os.family (imageOS, read from path) when that
// names linux or windows; else that family; else hostOS.
func doctorOS(given, path, imageOS string) (string, error) {
	known := imageOS == doctor.Linux || imageOS == doctor.Windows
	switch {
	case given != "" && known && given != imageOS:
		return "", fmt.Errorf("--os %s: --image-manifest %s is of a %s image (os.family): give --os %s, or the manifest of a %s image", given, path, imageOS, imageOS, given)
	case given != "":
		return given, nil
	case known:
		return imageOS, nil
	}
	return hostOS, nil
}
