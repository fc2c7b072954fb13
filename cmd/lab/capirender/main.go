// Command kubenode-capi-render prints the cloud-init user data that Cluster
// API's kubeadm bootstrap provider (CABPK) puts into a worker Machine's
// bootstrap Secret, rendered with Cluster API's own code: the KubeadmConfig's
// JoinConfiguration is marshalled by bootstrap/kubeadm/pkg/types and the user
// data is written by bootstrap/kubeadm/pkg/cloudinit, as the controller's
// joinWorker does. The lab uses it to give its node image the very user data
// a Cluster API cluster would give a worker Machine.
//
// It is a Go module of its own because Cluster API needs newer k8s.io modules
// than the plugin: the plugin's module never imports Cluster API.
//
//	echo abcdef.0123456789abcdef | kubenode-capi-render --kubernetes-version v1.33.13 \
//	  --api-server-endpoint 10.0.2.2:6443 --token-file - \
//	  --ca-cert-hash sha256:<hex> [--ca-cert-hash ...] \
//	  [--ssh-user NAME --ssh-authorized-key "ssh-ed25519 AAAA..."] \
//	  [--file /guest/path=/local/path] [--output FILE]
package main

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	corev1 "k8s.io/api/core/v1"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/cloudinit"
	kubeadmtypes "sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/types"
)

// nodeNameTemplate is the nodeRegistration.name Cluster API's infrastructure
// templates give workers: cloud-init's jinja fills in the instance's local
// host name (hence the `## template: jinja` header).
const nodeNameTemplate = "{{ ds.meta_data.local_hostname }}"

// Every --file is written root-owned and world-readable.
const (
	fileOwner       = "root:root"
	filePermissions = "0644"
)

func main() {
	err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	default:
		fmt.Fprintln(os.Stderr, "kubenode-capi-render:", err)
		os.Exit(1)
	}
}

// options are the command line's values.
type options struct {
	kubernetesVersion string
	apiServerEndpoint string
	tokenFile         string // - for stdin
	tokenFlag         string // --token, refused
	token             string // read from tokenFile
	caCertHashes      []string
	sshUser           string
	sshAuthorizedKeys []string
	sshUserSudo       string
	files             []string // guest=local
	output            string
}

// run parses args, reads the token from --token-file (or stdin), renders
// the user data and writes it to --output or stdout.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.token, err = readToken(o.tokenFile, stdin); err != nil {
		return err
	}
	spec, version, err := o.kubeadmConfig()
	if err != nil {
		return err
	}
	data, err := workerUserData(spec, version)
	if err != nil {
		return err
	}
	if o.output == "" {
		_, err = stdout.Write(data)
		return err
	}
	// 0600: the user data holds the bootstrap token.
	if err := os.WriteFile(o.output, data, 0o600); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	return nil
}

// readToken reads the bootstrap token from file, or stdin for "-": the
// first line, without surrounding white space.
func readToken(file string, stdin io.Reader) (string, error) {
	r := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return "", fmt.Errorf("--token-file %s: %w", file, err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line), nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("kubenode-capi-render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.kubernetesVersion, "kubernetes-version", "", "the worker Machine's Kubernetes version, e.g. v1.33.13 (selects the kubeadm API version); required")
	fs.StringVar(&o.apiServerEndpoint, "api-server-endpoint", "", "the control plane endpoint HOST:PORT for bootstrap-token discovery; required")
	fs.StringVar(&o.tokenFile, "token-file", "", "a `file` holding the bootstrap token [a-z0-9]{6}.[a-z0-9]{16}, - for stdin; required (not on the command line, where every local user sees it)")
	fs.StringVar(&o.tokenFlag, "token", "", "refused: use --token-file")
	fs.Var((*stringList)(&o.caCertHashes), "ca-cert-hash", "sha256:<hex> of the cluster CA's public key; repeatable, at least one")
	fs.StringVar(&o.sshUser, "ssh-user", "", "a user cloud-init creates (needs --ssh-authorized-key)")
	fs.Var((*stringList)(&o.sshAuthorizedKeys), "ssh-authorized-key", "an authorized key of --ssh-user; repeatable")
	fs.StringVar(&o.sshUserSudo, "ssh-user-sudo", "", "the sudoers rule of --ssh-user (a KubeadmConfigSpec user's sudo), e.g. \"ALL=(ALL) NOPASSWD:ALL\"; none by default")
	fs.Var((*stringList)(&o.files), "file", "GUEST_PATH=LOCAL_PATH: a KubeadmConfigSpec file (root:root, 0644) whose content is the local file's; repeatable")
	fs.StringVar(&o.output, "output", "", "write the user data to this file (mode 0600) instead of stdout")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q: every value is given by a flag", fs.Arg(0))
	}
	for _, required := range []struct{ name, value string }{
		{"--kubernetes-version", o.kubernetesVersion},
		{"--api-server-endpoint", o.apiServerEndpoint},
	} {
		if required.value == "" {
			return o, fmt.Errorf("%s is required", required.name)
		}
	}
	if o.tokenFlag != "" {
		return o, errors.New("--token: a token on the command line is seen by every local user (ps); give it with --token-file FILE, or --token-file - on stdin")
	}
	if o.tokenFile == "" {
		return o, errors.New("--token-file is required (- reads the token from stdin)")
	}
	if len(o.caCertHashes) == 0 {
		return o, errors.New("--ca-cert-hash is required (at least one)")
	}
	if o.sshUser != "" && len(o.sshAuthorizedKeys) == 0 {
		return o, errors.New("--ssh-authorized-key is required with --ssh-user")
	}
	if o.sshUser == "" && o.sshUserSudo != "" {
		return o, errors.New("--ssh-user is required with --ssh-user-sudo")
	}
	if o.sshUser == "" && len(o.sshAuthorizedKeys) > 0 {
		return o, errors.New("--ssh-user is required with --ssh-authorized-key")
	}
	return o, nil
}

// kubeadmConfig is the worker's KubeadmConfigSpec as Cluster API would hold
// it once its controller has reconciled discovery (reconcileDiscovery: the
// endpoint, token and CA hashes are given here, so nothing is filled in),
// and the Machine's Kubernetes version.
func (o options) kubeadmConfig() (bootstrapv1.KubeadmConfigSpec, semver.Version, error) {
	var spec bootstrapv1.KubeadmConfigSpec
	// The controller parses the Machine's version with ParseTolerant too.
	version, err := semver.ParseTolerant(o.kubernetesVersion)
	if err != nil {
		return spec, version, fmt.Errorf("--kubernetes-version %q: %w", o.kubernetesVersion, err)
	}
	if _, err := kubeadmtypes.KubeVersionToKubeadmAPIGroupVersion(version); err != nil {
		return spec, version, fmt.Errorf("--kubernetes-version %q: %w", o.kubernetesVersion, err)
	}
	host, port, err := net.SplitHostPort(o.apiServerEndpoint)
	if err == nil && host == "" {
		err = errors.New("no host")
	}
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 1 || n > 65535 {
			err = fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
	}
	if err != nil {
		return spec, version, fmt.Errorf("--api-server-endpoint %q: want HOST:PORT: %w", o.apiServerEndpoint, err)
	}
	if !bootstraputil.IsValidBootstrapToken(o.token) {
		// The value is not shown: it may be a token with a typo.
		return spec, version, fmt.Errorf("--token-file %s: not a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})", o.tokenFile)
	}
	for _, h := range o.caCertHashes {
		if err := checkCACertHash(h); err != nil {
			return spec, version, fmt.Errorf("--ca-cert-hash %q: %w", h, err)
		}
	}
	spec.JoinConfiguration = bootstrapv1.JoinConfiguration{
		NodeRegistration: bootstrapv1.NodeRegistrationOptions{Name: nodeNameTemplate},
		Discovery: bootstrapv1.Discovery{BootstrapToken: bootstrapv1.BootstrapTokenDiscovery{
			APIServerEndpoint: o.apiServerEndpoint,
			Token:             o.token,
			CACertHashes:      o.caCertHashes,
		}},
	}
	if o.sshUser != "" {
		u := bootstrapv1.User{Name: o.sshUser, SSHAuthorizedKeys: o.sshAuthorizedKeys}
		if o.sshUserSudo != "" {
			u.Sudo = o.sshUserSudo
		}
		spec.Users = []bootstrapv1.User{u}
	}
	seen := map[string]bool{}
	for _, f := range o.files {
		guest, local, ok := strings.Cut(f, "=")
		if !ok || guest == "" || local == "" {
			return spec, version, fmt.Errorf("--file %q: want GUEST_PATH=LOCAL_PATH", f)
		}
		// Cluster API's KubeadmConfig webhook (bootstrap/kubeadm/webhooks/
		// admission/kubeadmconfig.go, validateFiles) refuses a path twice.
		if seen[guest] {
			return spec, version, fmt.Errorf("--file %q: %s is given twice", f, guest)
		}
		seen[guest] = true
		content, err := os.ReadFile(local)
		if err != nil {
			return spec, version, fmt.Errorf("--file %q: %w", f, err)
		}
		spec.Files = append(spec.Files, bootstrapv1.File{Path: guest, Owner: fileOwner, Permissions: filePermissions, Content: string(content)})
	}
	return spec, version, nil
}

// checkCACertHash accepts what kubeadm's discovery accepts: sha256: and the
// hex of 32 bytes.
func checkCACertHash(h string) error {
	hexPart, ok := strings.CutPrefix(h, "sha256:")
	if !ok {
		return errors.New("want sha256:<hex>")
	}
	b, err := hex.DecodeString(hexPart)
	if err != nil || len(b) != 32 {
		return errors.New("want sha256: and 64 hex digits")
	}
	return nil
}

// workerUserData does what Cluster API v1.14.2's KubeadmConfig controller
// does for a worker Machine (joinWorker in
// bootstrap/kubeadm/reconcilers/kubeadmconfig/kubeadmconfig_controller.go)
// once its certificates and discovery are in place, and returns what it
// stores as the bootstrap Secret's value. The parts that read the
// management cluster are left out: no file is a template or comes from a
// Secret, no user's password comes from a Secret, and discovery is by token.
func workerUserData(spec bootstrapv1.KubeadmConfigSpec, version semver.Version) ([]byte, error) {
	// Add the node uninitialized taint to the list of taints, on a copy,
	// as the controller does.
	joinConfiguration := spec.JoinConfiguration.DeepCopy()
	taints := []corev1.Taint{}
	if joinConfiguration.NodeRegistration.Taints != nil {
		taints = *joinConfiguration.NodeRegistration.Taints
	}
	if !hasTaint(taints, clusterv1.NodeUninitializedTaint) {
		taints = append(taints, clusterv1.NodeUninitializedTaint)
		joinConfiguration.NodeRegistration.Taints = &taints
	}
	joinData, err := kubeadmtypes.MarshalJoinConfigurationForVersion(joinConfiguration, version)
	if err != nil {
		return nil, fmt.Errorf("--kubernetes-version %s: marshal the JoinConfiguration: %w", version, err)
	}
	if spec.JoinConfiguration.ControlPlane != nil {
		return nil, errors.New("Machine is a Worker, but JoinConfiguration.ControlPlane is set")
	}
	verbosityFlag := ""
	if spec.Verbosity != nil {
		verbosityFlag = fmt.Sprintf("--v %s", strconv.Itoa(int(*spec.Verbosity)))
	}
	nodeInput := &cloudinit.NodeInput{
		BaseUserData: cloudinit.BaseUserData{
			AdditionalFiles: spec.Files,
			NTP: func() *bootstrapv1.NTP {
				if spec.NTP.IsDefined() {
					return &spec.NTP
				}
				return nil
			}(),
			BootCommands:        spec.BootCommands,
			PreKubeadmCommands:  spec.PreKubeadmCommands,
			PostKubeadmCommands: spec.PostKubeadmCommands,
			Users:               spec.Users,
			Mounts:              spec.Mounts,
			DiskSetup: func() *bootstrapv1.DiskSetup {
				if spec.DiskSetup.IsDefined() {
					return &spec.DiskSetup
				}
				return nil
			}(),
			KubeadmVerbosity:  verbosityFlag,
			KubernetesVersion: version,
		},
		JoinConfiguration: joinData,
	}
	data, err := cloudinit.NewNode(nodeInput)
	if err != nil {
		return nil, fmt.Errorf("render the worker's cloud-init user data: %w", err)
	}
	return data, nil
}

// hasTaint is Cluster API's HasTaint (internal/util/taints/taints.go in
// v1.14.2), which Go's internal-package rule keeps us from importing.
func hasTaint(taints []corev1.Taint, targetTaint corev1.Taint) bool {
	for _, taint := range taints {
		if taint.MatchTaint(&targetTaint) {
			return true
		}
	}
	return false
}
