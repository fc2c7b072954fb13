// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	sdknet "github.com/hashicorp/packer-plugin-sdk/net"
	"golang.org/x/crypto/ssh"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
)

// LabVMLabel names, on a node booted with its join seed alone
// (Options.JoinSeedOnlyNodes), the VM it runs in (the label its join seed
// asks for).
const LabVMLabel = "kubenode.io/lab-vm"

// guestUser is the account the image was built with (examples/debian-12-node.pkr.hcl).
const guestUser = "kubenode"

// Node is one VM booted from the image with its own join seed.
type Node struct {
	Name      string // its Kubernetes node name and host name
	VMName    string // its libvirt domain
	GuestIP   string // its address on its QEMU user network
	MAC       string // its NIC's MAC address, the lab's own per VM
	SSHPort   int    // 127.0.0.1's port forwarded to its sshd
	SerialLog string // its serial console
	// BootToReady is the time from its start to a Ready, labelled Node.
	BootToReady time.Duration
	// FirstBoot is how cloud-init's first boot of the clone ended: its
	// `cloud-init status --long`, read once the lab's workload stage has
	// waited for it (empty on a node with no SSH).
	FirstBoot string
	// JoinSeedOnly says the node booted with its join seed disc alone
	// (Options.JoinSeedOnlyNodes): Name is the one the clone gave itself,
	// found once it registered, and the lab has no SSH into it.
	JoinSeedOnly bool

	// UninitializedTaintRemoved says the Node carried Cluster API's
	// uninitialized taint when its bootstrap had run, and the lab removed
	// it.
	UninitializedTaintRemoved bool
	// Datasource is the cloud-init datasource whose disc carries the
	// node's Cluster API bootstrap data (NoCloud or ConfigDrive); empty
	// with the joiner.
	Datasource string

	seedISO  string // the joiner's seed disc
	userData []byte // the Cluster API bootstrap data
	disk     string // what it boots instead of the built image
	started  time.Time
	ssh      *sshTarget
}

// SSHUser is the account the lab logs in as: the image's build account
// (kept by the lab's joiner template), or the one the Cluster API
// bootstrap data makes.
func (n *Node) SSHUser() string {
	if n.Datasource != "" {
		return capiUser
	}
	return guestUser
}

// Guest runs a shell command on the node as root (through sudo) and
// returns its combined output.
func (n *Node) Guest(ctx context.Context, command string) (string, error) {
	if n.ssh == nil {
		return "", fmt.Errorf("no SSH into node %s: not booted yet, or booted with its join seed alone", n.Name)
	}
	return n.ssh.run(ctx, "sudo sh -c "+shellQuote(command))
}

// CloudInit waits, at most timeout, for cloud-init on the node to finish
// its boot and returns `cloud-init status --long`; an error when it ended
// in error or had not finished.
func (n *Node) CloudInit(ctx context.Context, timeout time.Duration) (string, error) {
	secs := int(timeout.Round(time.Second) / time.Second)
	// One cloud-init process where it can be (each is a Python start,
	// slow under TCG): --wait --long prints its progress dots,
	// then the long status; a second only when timeout cut the first short.
	out, err := n.Guest(ctx, fmt.Sprintf("rc=0; timeout %d cloud-init status --wait --long || rc=$?; [ $rc -ne 124 ] || cloud-init status --long; exit $rc", secs))
	out = strings.TrimLeft(out, ".\n")
	if err != nil {
		return out, fmt.Errorf("node %s: cloud-init did not finish cleanly within %s: %w", n.Name, timeout, err)
	}
	return out, nil
}

// HostKey is the SHA256 fingerprint (as `ssh-keygen -l` prints it) of the
// ed25519 host key the node's sshd presents. It is read in the SSH
// handshake, before any login, so it works on a node the lab has no SSH
// into (Node.JoinSeedOnly) as well.
func (n *Node) HostKey(ctx context.Context) (string, error) {
	return hostKey(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(n.SSHPort)))
}

func hostKey(ctx context.Context, addr string) (string, error) {
	var key ssh.PublicKey
	cfg := &ssh.ClientConfig{
		User:              guestUser,
		HostKeyAlgorithms: []string{ssh.KeyAlgoED25519},
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			key = k
			return nil
		},
		Timeout: 10 * time.Second,
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(cfg.Timeout))
	// No authentication method: the login fails once the key exchange,
	// which shows the host key, is done.
	c, _, _, err := ssh.NewClientConn(conn, addr, cfg)
	if c != nil {
		c.Close()
	}
	if key == nil {
		return "", fmt.Errorf("no host key from the sshd at %s: %w", addr, err)
	}
	return ssh.FingerprintSHA256(key), nil
}

// WaitSSH waits until the node answers over SSH (after a reboot, say).
func (n *Node) WaitSSH(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		_, err := n.ssh.run(ctx, "true")
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no SSH to node %s within %s: %w", n.Name, timeout, err)
		case <-time.After(3 * time.Second):
		}
	}
}

// vms is what booting a VM from the image needs: the libvirt connection,
// the lab's storage pool, the disks already uploaded into it, and the
// lab's SSH key.
type vms struct {
	d          libvirt.Driver
	pool       string
	bases      map[string]string // disk on this machine → its volume's path
	key        ssh.Signer
	authorized string // the key's authorized_keys line
	keyFile    string
	count      int // VMs booted so far: each gets its own address and MAC
}

// key makes the lab's SSH key once: the cloud-init seed (joiner) or the
// bootstrap data (Cluster API) lets it in.
func (l *Lab) key() error {
	if l.vms.key != nil {
		return nil
	}
	l.vms.keyFile = filepath.Join(l.opts.WorkDir, "id_ed25519")
	var err error
	l.vms.key, l.vms.authorized, err = newSSHKey(l.vms.keyFile)
	return err
}

// boot defines and starts one VM per node, all at once: each on a qcow2
// overlay of one copy of the image (the image itself stays untouched), or
// of the node's own disk (Options.NodeDisks), with its seed discs, and its
// own address and MAC on its own QEMU user network.
func (l *Lab) boot(ctx context.Context) error {
	for i, n := range l.Nodes {
		if i < len(l.opts.NodeDisks) && l.opts.NodeDisks[i] != "" {
			n.disk = l.opts.NodeDisks[i]
		}
		if err := l.bootVM(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// bootVM boots one node's VM. The first call connects to libvirt and
// makes the lab's storage pool: like the builder's, a pool of its own where
// libvirt's QEMU user can read, holding a copy of each disk the nodes boot
// from, their overlays and their seeds.
func (l *Lab) bootVM(ctx context.Context, n *Node) error {
	o := l.opts
	v := &l.vms
	if err := l.key(); err != nil {
		return err
	}
	if v.d == nil {
		d, err := libvirt.NewDriver("qemu:///system")
		if err != nil {
			return err
		}
		l.onClose("closing the libvirt connection", d.Close)
		pool := "kubenode-lab-" + l.id
		if err := d.CreatePool(pool, "/var/lib/libvirt/images/"+pool); err != nil {
			return err
		}
		l.onClose("deleting storage pool "+pool+" (virsh pool-destroy/pool-delete/pool-undefine "+pool+")", func() error { return d.DeletePool(pool) })
		v.d, v.pool, v.bases = d, pool, map[string]string{}
	}
	d, pool := v.d, v.pool
	upload := func(file string, vol libvirt.Volume) (string, error) {
		p, err := libvirt.UploadFile(ctx, d, pool, file, vol, nil)
		if err != nil {
			return "", fmt.Errorf("uploading %s: %w", file, err)
		}
		l.onClose("deleting volume "+vol.Name, func() error { return d.DeleteVolume(pool, vol.Name) })
		return p, nil
	}
	disk := n.disk
	if disk == "" {
		disk = l.Image
	}
	base, ok := v.bases[disk]
	if !ok {
		var err error
		base, err = upload(disk, libvirt.Volume{Name: fmt.Sprintf("disk-%d.qcow2", len(v.bases)+1), Format: "qcow2"})
		if err != nil {
			return err
		}
		v.bases[disk] = base
	}
	size, err := virtualSize(ctx, disk)
	if err != nil {
		return err
	}
	seeds, err := l.seedDiscs(n)
	if err != nil {
		return err
	}
	var cdroms []string
	for _, iso := range seeds {
		p, err := upload(iso, libvirt.Volume{Name: filepath.Base(iso), Format: "raw"})
		if err != nil {
			return err
		}
		cdroms = append(cdroms, p)
	}
	n.VMName = n.Name
	vol, err := d.CreateVolume(pool, libvirt.Volume{Name: n.VMName + ".qcow2", Format: "qcow2", Capacity: size,
		BackingPath: base, BackingFormat: "qcow2"})
	if err != nil {
		return err
	}
	l.onClose("deleting volume "+n.VMName+".qcow2", func() error { return d.DeleteVolume(pool, n.VMName+".qcow2") })
	if n.SSHPort, err = l.reservePort(ctx); err != nil {
		return err
	}
	// QEMU user networking: every VM has a network of its own where this
	// machine is 10.0.2.2; the addresses differ all the same, as machines'
	// addresses do.
	v.count++
	n.GuestIP = fmt.Sprintf("10.0.2.%d", 14+v.count)
	// virtlogd writes it; the work dir is removed at the end.
	n.SerialLog = filepath.Join(o.WorkDir, n.Name+"-serial.log")
	n.MAC = fmt.Sprintf("52:54:00:6b:6e:%02x", v.count)
	x, err := libvirt.VM{Name: n.VMName, Accelerator: o.Accelerator, CPUs: o.CPUs, MemoryMiB: 2048, Disk: vol,
		CDROMs: cdroms, SSHPort: n.SSHPort, GuestIP: n.GuestIP, MAC: n.MAC,
		SerialLog: n.SerialLog}.DomainXML()
	if err != nil {
		return err
	}
	if err := d.DefineDomain(x); err != nil {
		return err
	}
	vm := n.VMName
	l.onClose("removing domain "+vm+" (virsh destroy "+vm+"; virsh undefine "+vm+")", func() error {
		derr := d.DestroyDomain(vm)
		if uerr := d.UndefineDomain(vm); uerr != nil {
			return uerr
		}
		return derr
	})
	if err := d.StartDomain(vm); err != nil {
		return err
	}
	n.started = time.Now()
	how, login := "join seed disc", fmt.Sprintf("ssh -i %s -p %d %s@127.0.0.1", v.keyFile, n.SSHPort, n.SSHUser())
	if n.JoinSeedOnly {
		how, login = "join seed disc alone", "no SSH (no cloud-init seed lets the lab in)"
	} else {
		n.ssh = &sshTarget{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(n.SSHPort)), user: n.SSHUser(), key: v.key}
	}
	if n.Datasource != "" {
		how = "Cluster API bootstrap data on a " + n.Datasource + " disc"
	}
	l.say("node %s booting (%s, %d vCPU, 2048 MiB, %s) from an overlay on %s with its %s; %s; serial console %s",
		vm, o.Accelerator, o.CPUs, n.GuestIP, filepath.Base(disk), how, login, n.SerialLog)
	return nil
}

// seedDiscs writes the discs a node boots with: with the joiner, a
// cloud-init seed that sets its host name and lets the lab in over SSH,
// and its join seed; with Cluster API, the disc of its datasource, which
// carries the bootstrap data.
func (l *Lab) seedDiscs(n *Node) ([]string, error) {
	if n.Datasource != "" {
		iso := filepath.Join(l.opts.WorkDir, n.Name+"-"+strings.ToLower(n.Datasource)+".iso")
		disc, err := clusterAPISeed(n.Datasource, n.Name, n.userData)
		if err != nil {
			return nil, err
		}
		return []string{iso}, writeISO(iso, disc)
	}
	if n.JoinSeedOnly {
		return []string{n.seedISO}, nil
	}
	cidata, err := autounattend.LinuxSeed(autounattend.Linux{
		Flavor: autounattend.FlavorCloudInit, Hostname: n.Name, Username: guestUser,
		SSHAuthorizedKeys: []string{l.vms.authorized},
		// A new instance: cloud-init runs its per-instance modules again on
		// the generalized image.
		InstanceID: "iid-" + n.Name,
		// The image has C.UTF-8 only: cloud-init's Debian default,
		// en_US.UTF-8, would end the clone's first boot in error.
		Locale: "C.UTF-8",
	})
	if err != nil {
		return nil, fmt.Errorf("cloud-init seed: %w", err)
	}
	cidataISO := filepath.Join(l.opts.WorkDir, n.Name+"-cidata.iso")
	if err := writeISO(cidataISO, cidata); err != nil {
		return nil, err
	}
	return []string{cidataISO, n.seedISO}, nil
}

// writeISO writes a seed disc (mode 0600) through safefile.
func writeISO(path string, d autounattend.Disc) error {
	return safefile.Write(path, 0o600, func(w io.Writer) error { return autounattend.WriteISO(w, d) })
}

// waitReady waits until every node exists, is Ready and carries every
// label asked for, printing each change of their states.
func (l *Lab) waitReady(ctx context.Context) error {
	client, err := l.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.ReadyTimeout)
	defer cancel()
	last := map[*Node]string{}
	lastSaid := map[*Node]time.Time{}
	joinerLines := map[*Node]int{}
	for i := 0; ; i++ {
		pending := 0
		for _, n := range l.Nodes {
			if n.BootToReady > 0 {
				continue
			}
			state := l.nodeState(ctx, client, n)
			if state != last[n] || time.Since(lastSaid[n]) > time.Minute {
				l.say("node %s: %s", n.Name, state)
				last[n], lastSaid[n] = state, time.Now()
			}
			if state == "Ready, labelled" {
				n.BootToReady = time.Since(n.started)
				l.showJoinerLog(ctx, n, joinerLines)
				l.say("node %s: Ready %s after its start", n.Name, n.BootToReady.Round(100*time.Millisecond))
				continue
			}
			pending++
			if i%5 == 0 {
				l.showJoinerLog(ctx, n, joinerLines)
			}
		}
		if pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if ctx.Err() != context.DeadlineExceeded {
				return ctx.Err()
			}
			var errs []string
			for _, n := range l.Nodes {
				if n.BootToReady > 0 {
					continue
				}
				kubelet, _ := n.Guest(context.Background(), "journalctl -u kubelet.service -n 25 --no-pager -o cat")
				errs = append(errs, fmt.Sprintf("node %s not Ready and labelled after %s (last: %s); the kubelet's last log lines:\n%s\n`joiner doctor --node %s` explains a NotReady node; the serial console is %s",
					n.Name, l.opts.ReadyTimeout, last[n], kubelet, n.Name, n.SerialLog))
			}
			return errors.New(strings.Join(errs, "\n"))
		case <-time.After(2 * time.Second):
		}
	}
}

// showJoinerLog prints the lines the node's joiner (or, with Cluster API's
// bootstrap, cloud-init) logged since the last call (its log file, read
// over SSH); it stays quiet while there is no SSH.
func (l *Lab) showJoinerLog(ctx context.Context, n *Node, seen map[*Node]int) {
	if n.ssh == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	log, who := config.DefaultPaths().Log, "joiner"
	if n.Datasource != "" {
		log, who = "/var/log/cloud-init-output.log", "cloud-init"
	}
	out, err := n.Guest(ctx, fmt.Sprintf("tail -n +%d %s 2>/dev/null || true", seen[n]+1, log))
	if err != nil {
		return
	}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line != "" {
			seen[n]++
			l.say("    %s %s | %s", who, n.Name, line)
		}
	}
}

// nodeState is a one-line account of the node, "Ready, labelled" once done.
func (l *Lab) nodeState(ctx context.Context, client kubernetes.Interface, node *Node) string {
	if node.JoinSeedOnly && node.VMName == node.Name {
		// Its name is the clone's own: find it by the label its seed asks for.
		found, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabVMLabel + "=" + node.VMName})
		if err != nil {
			return "not registered yet (" + shortErr(err) + ")"
		}
		if len(found.Items) == 0 {
			return "not registered yet (no Node labelled " + LabVMLabel + "=" + node.VMName + ")"
		}
		if len(found.Items) > 1 {
			return fmt.Sprintf("%d Nodes labelled %s=%s", len(found.Items), LabVMLabel, node.VMName)
		}
		node.Name = found.Items[0].Name
		l.say("VM %s registered as node %s (the name the clone gave itself)", node.VMName, node.Name)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		if node.ssh != nil && !node.ssh.reachable() {
			return "not registered; the VM is still booting (no SSH yet)"
		}
		return "not registered yet (" + shortErr(err) + ")"
	}
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status != corev1.ConditionTrue {
			return fmt.Sprintf("registered, NotReady (%s: %s)", c.Reason, c.Message)
		}
		for k, v := range l.opts.Labels {
			if n.Labels[k] != v {
				return fmt.Sprintf("Ready, waiting for label %s=%s", k, v)
			}
		}
		return "Ready, labelled"
	}
	return "registered, no Ready condition yet"
}

// Client is a clientset for the cluster the node joined, as its admin.
func (l *Lab) Client() (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", l.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", l.Kubeconfig, err)
	}
	return kubernetes.NewForConfig(rc)
}

// Kubectl runs kubectl against the cluster.
func (l *Lab) Kubectl(ctx context.Context, args ...string) (string, error) {
	base := []string{"--kubeconfig", l.Kubeconfig, "--cache-dir", filepath.Join(l.opts.WorkDir, "kubectl-cache")}
	out, err := exec.CommandContext(ctx, l.kubectl, append(base, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// virtualSize is a disk image's size as the guest sees it.
func virtualSize(ctx context.Context, image string) (uint64, error) {
	out, err := exec.CommandContext(ctx, "qemu-img", "info", "--output=json", image).Output()
	if err != nil {
		return 0, fmt.Errorf("qemu-img info %s: %w", image, err)
	}
	var info struct {
		VirtualSize uint64 `json:"virtual-size"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return 0, fmt.Errorf("qemu-img info %s: %w", image, err)
	}
	return info.VirtualSize, nil
}

// The nodes' SSH forwards take ports in the builder's default
// host_port_min-host_port_max, reserved the builder's way (the SDK's lock
// files in Packer's cache): a lab and a build on this machine never pick
// the same port.
const sshPortMin, sshPortMax = 2222, 4444

// reservePort reserves a free port on 127.0.0.1 for a node's SSH forward:
// its lock is held until the lab closes, the port itself left free for
// QEMU to bind.
func (l *Lab) reservePort(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ln, err := sdknet.ListenRangeConfig{Network: "tcp", Addr: "127.0.0.1", Min: sshPortMin, Max: sshPortMax + 1}.Listen(ctx)
	if err != nil {
		return 0, fmt.Errorf("no free port on 127.0.0.1 between %d and %d for a node's SSH forward: %w", sshPortMin, sshPortMax, err)
	}
	ln.Listener.Close()
	port := ln.Port
	l.onClose(fmt.Sprintf("releasing the reservation of port %d", port), func() error {
		// The listener is closed already: Close unlocks, then reports that.
		_ = ln.Close()
		return nil
	})
	return port, nil
}

// freePort is a port free now, for a process this lab starts at once.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func randomSuffix() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
