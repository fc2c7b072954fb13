// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/linux"
)

// How the lab's nodes join (Options.Bootstrap).
const (
	BootstrapJoiner     = "joiner"
	BootstrapClusterAPI = "cluster-api"
)

// The datasources whose discs carry a node's Cluster API bootstrap data,
// as infrastructure providers write them: a NoCloud disc (label cidata:
// user-data, meta-data), as Proxmox's provider does, and a config drive
// (label config-2: openstack/latest/user_data and meta_data.json), as
// Metal3's Ironic, KubeVirt's CloudInitConfigDrive and OpenStack do.
const (
	DatasourceNoCloud     = "NoCloud"
	DatasourceConfigDrive = "ConfigDrive"
)

// Cluster API's conventions the lab follows.
const (
	// SentinelFile is what the kubeadm bootstrap data's runcmd writes
	// "success" to once kubeadm join succeeded; Cluster API's KubeVirt
	// provider reads it over SSH.
	SentinelFile = "/run/cluster-api/bootstrap-success.complete"
	// UninitializedTaint is the taint the kubeadm bootstrap provider puts
	// on every worker; Cluster API's Machine controller removes it once
	// the Node is up.
	UninitializedTaint = "node.cluster.x-k8s.io/uninitialized"
	// capiUser is the account the lab's bootstrap data makes (Cluster API
	// users list theirs in the KubeadmConfigTemplate's users).
	capiUser = "capi"
	// capiConflist is where the lab's bootstrap data writes the node's
	// network config: the lab's stand-in for the cluster's CNI DaemonSet,
	// which the image (cni = "none") leaves to the cluster.
	capiConflist = "/etc/cni/net.d/10-kubenode-bridge.conflist"
)

// datasourceOf is the datasource of the i-th node: NoCloud and ConfigDrive
// in turn, so that two nodes cover both.
func datasourceOf(i int) string {
	if i%2 == 0 {
		return DatasourceNoCloud
	}
	return DatasourceConfigDrive
}

// seedClusterAPI makes, for each node, a bootstrap token and the kubeadm
// bootstrap data Cluster API would give a worker Machine of that cluster.
func (l *Lab) seedClusterAPI(ctx context.Context) error {
	for i := range l.opts.Nodes {
		n := &Node{Name: fmt.Sprintf("kubenode-lab-%s-%d", l.id, i+1), Datasource: datasourceOf(i)}
		if err := l.renderBootstrap(ctx, n, i+1); err != nil {
			return err
		}
		l.Nodes = append(l.Nodes, n)
	}
	return nil
}

// renderBootstrap makes the node's bootstrap data: `joiner token` makes a
// bootstrap token and pins the cluster's CA from cluster-info (what the
// kubeadm bootstrap provider does for each Machine), and
// kubenode-capi-render turns them into the user data with Cluster API's own
// code. The data also makes the lab's SSH account and writes a bridge
// network config with a pod subnet of the node's own, 10.85.<subnet>.0/24.
func (l *Lab) renderBootstrap(ctx context.Context, n *Node, subnet int) error {
	if err := l.key(); err != nil {
		return err
	}
	join := filepath.Join(l.opts.WorkDir, n.Name+"-join.yaml")
	args := []string{"token", "--kubeconfig", l.Kubeconfig, "--output", join, "--ttl", "2h",
		"--description", "kubenode lab node " + n.Name + " (Cluster API bootstrap data)"}
	if l.Manifest != "" {
		args = append(args, "--image-manifest", l.Manifest)
	}
	out, err := exec.CommandContext(ctx, l.opts.Joiner, args...).CombinedOutput()
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		l.say("    token %s | %s", n.Name, line)
	}
	if err != nil {
		return fmt.Errorf("joiner %s: %w", strings.Join(args, " "), err)
	}
	data, err := config.ReadFile(join)
	if err != nil {
		return err
	}
	c := config.New()
	if err := c.Merge(join, data); err != nil {
		return err
	}
	conflist := filepath.Join(l.opts.WorkDir, n.Name+"-conflist.json")
	if err := safefile.WriteFile(conflist, []byte(linux.BridgeConflist(fmt.Sprintf("10.85.%d.0/24", subnet))), 0o644); err != nil {
		return err
	}
	userData := filepath.Join(l.opts.WorkDir, n.Name+"-user-data")
	// The token goes in on stdin: on the command line, every local user
	// would see it.
	args = []string{"--kubernetes-version", l.kubernetesVersion, "--api-server-endpoint", c.APIServerEndpoint,
		"--token-file", "-", "--ssh-user", capiUser, "--ssh-user-sudo", "ALL=(ALL) NOPASSWD:ALL", "--ssh-authorized-key", l.vms.authorized,
		"--file", capiConflist + "=" + conflist, "--output", userData}
	for _, h := range c.CACertHashes {
		args = append(args, "--ca-cert-hash", h)
	}
	render := exec.CommandContext(ctx, l.opts.CAPIRender, args...)
	render.Stdin = strings.NewReader(c.Token + "\n")
	if out, err := render.CombinedOutput(); err != nil {
		return fmt.Errorf("kubenode-capi-render: %w\n%s", err, out)
	}
	if n.userData, err = os.ReadFile(userData); err != nil {
		return err
	}
	l.say("node %s: Cluster API kubeadm bootstrap data (%d bytes, API server %s) on a %s disc", n.Name, len(n.userData), c.APIServerEndpoint, n.Datasource)
	return nil
}

// clusterAPISeed is the disc that carries bootstrap data through the
// datasource: what the infrastructure provider would attach.
func clusterAPISeed(datasource, hostname string, userData []byte) (autounattend.Disc, error) {
	switch datasource {
	case DatasourceNoCloud:
		meta := fmt.Sprintf("instance-id: iid-%s\nlocal-hostname: %s\n", hostname, hostname)
		return autounattend.Disc{Label: "cidata", Files: []autounattend.File{
			{Name: "user-data", Data: userData}, {Name: "meta-data", Data: []byte(meta)}}}, nil
	case DatasourceConfigDrive:
		meta, err := json.Marshal(map[string]string{"uuid": newUUID(), "hostname": hostname, "name": hostname})
		if err != nil {
			return autounattend.Disc{}, err
		}
		return autounattend.Disc{Label: "config-2", Files: []autounattend.File{
			{Name: "openstack/latest/user_data", Data: userData},
			{Name: "openstack/latest/meta_data.json", Data: meta}}}, nil
	}
	return autounattend.Disc{}, fmt.Errorf("datasource %q: want %s or %s", datasource, DatasourceNoCloud, DatasourceConfigDrive)
}

// newUUID is a random (version 4) UUID, as a config drive's instance uuid.
func newUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// initializeNodes does, for each Ready node, what Cluster API does next:
// its KubeVirt provider's check that the bootstrap data ran (the sentinel
// file reads "success", over SSH), then what its Machine controller does
// once the Node is up: remove the uninitialized taint, so that workloads
// may run there.
func (l *Lab) initializeNodes(ctx context.Context) error {
	client, err := l.Client()
	if err != nil {
		return err
	}
	for _, n := range l.Nodes {
		got, err := n.Sentinel(ctx, 5*time.Minute)
		if err != nil {
			return err
		}
		l.say("node %s: %s reads %q", n.Name, SentinelFile, got)
		found := false
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			kept := node.Spec.Taints[:0]
			for _, t := range node.Spec.Taints {
				if t.Key != UninitializedTaint {
					kept = append(kept, t)
				}
			}
			if len(kept) == len(node.Spec.Taints) {
				return nil
			}
			found = true
			node.Spec.Taints = kept
			_, err = client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("node %s: removing the %s taint: %w", n.Name, UninitializedTaint, err)
		}
		if !found {
			l.say("node %s: no %s taint to remove", n.Name, UninitializedTaint)
			continue
		}
		n.UninitializedTaintRemoved = true
		l.say("node %s: taint %s:%s removed, as Cluster API's Machine controller would", n.Name, UninitializedTaint, corev1.TaintEffectNoSchedule)
	}
	return nil
}

// Sentinel waits, at most timeout, until the node's bootstrap data wrote
// "success" to SentinelFile, and returns what the file holds.
func (n *Node) Sentinel(ctx context.Context, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		// As Cluster API's KubeVirt provider reads it: as the account its
		// bootstrap data made, without sudo.
		if n.ssh == nil {
			return "", fmt.Errorf("node %s has not been booted", n.Name)
		}
		out, err := n.ssh.run(ctx, "cat "+SentinelFile)
		if err == nil && strings.TrimSpace(out) == "success" {
			return strings.TrimSpace(out), nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("it reads %q", strings.TrimSpace(out))
			}
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
			defer cancel()
			tail, _ := n.Guest(tctx, "tail -n 25 /var/log/cloud-init-output.log")
			return "", fmt.Errorf("node %s: %s does not read success within %s (%v); cloud-init's output ends:\n%s", n.Name, SentinelFile, timeout, err, tail)
		case <-time.After(3 * time.Second):
		}
	}
}

// BootClusterAPINode boots one more VM into the running lab, from disk,
// with Cluster API bootstrap data for this cluster on a disc of the
// datasource, and returns without waiting for it to join (the lab's
// teardown removes it). Options.CAPIRender renders the data; the lab may
// use either bootstrap, so that a joiner image can be given Cluster API's
// data as a control.
func (l *Lab) BootClusterAPINode(ctx context.Context, disk, datasource string) (*Node, error) {
	if l.opts.CAPIRender == "" {
		return nil, fmt.Errorf("lab: BootClusterAPINode renders the bootstrap data with kubenode-capi-render: set Options.CAPIRender")
	}
	l.extra++
	n := &Node{Name: fmt.Sprintf("kubenode-lab-%s-extra-%d", l.id, l.extra), Datasource: datasource, disk: disk}
	if err := l.renderBootstrap(ctx, n, l.opts.Nodes+l.extra); err != nil {
		return nil, err
	}
	if err := l.bootVM(ctx, n); err != nil {
		return nil, err
	}
	return n, nil
}

// PowerOff pulls the plug on one of the lab's VMs (virsh destroy), e.g. a
// control that has shown what it had to; its domain and disks stay until
// the teardown removes them.
func (l *Lab) PowerOff(n *Node) error {
	if l.vms.d == nil || n.VMName == "" {
		return fmt.Errorf("lab: node %s has no VM", n.Name)
	}
	if n.ssh != nil {
		n.ssh.close()
	}
	return l.vms.d.DestroyDomain(n.VMName)
}
