package lab

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
)

// guestUser is the account the image was built with (examples/debian-12-node.pkr.hcl).
const guestUser = "kubenode"

// boot defines and starts the node VM from the exported image: a qcow2
// overlay on it (the image itself stays untouched), a cloud-init seed that
// sets the host name and lets the lab in over SSH, and the join seed.
func (l *Lab) boot(ctx context.Context) error {
	o := l.opts
	keyFile := filepath.Join(o.WorkDir, "id_ed25519")
	key, authorized, err := newSSHKey(keyFile)
	if err != nil {
		return err
	}
	cidata, err := autounattend.LinuxSeed(autounattend.Linux{
		Flavor: autounattend.FlavorCloudInit, Hostname: l.NodeName, Username: guestUser,
		SSHAuthorizedKeys: []string{authorized},
		// A new instance: cloud-init runs its per-instance modules again
		// on the generalized image.
		InstanceID: "iid-" + l.NodeName,
	})
	if err != nil {
		return fmt.Errorf("cloud-init seed: %w", err)
	}
	cidataISO := filepath.Join(o.WorkDir, "cidata.iso")
	if err := autounattend.WriteISOFile(cidataISO, cidata); err != nil {
		return err
	}

	size, err := virtualSize(ctx, l.Image)
	if err != nil {
		return err
	}
	d, err := libvirt.NewDriver("qemu:///system")
	if err != nil {
		return err
	}
	l.onClose("closing the libvirt connection", d.Close)
	vmName := "kubenode-lab-" + strings.TrimPrefix(l.NodeName, "kubenode-lab-")
	// Like the builder's: a pool of its own where libvirt's QEMU user
	// can read, holding a copy of the image, an overlay on it and the seeds.
	pool := vmName
	if err := d.CreatePool(pool, "/var/lib/libvirt/images/"+pool); err != nil {
		return err
	}
	l.onClose("deleting storage pool "+pool+" (virsh pool-destroy/pool-delete/pool-undefine "+pool+")", func() error { return d.DeletePool(pool) })
	upload := func(file string, v libvirt.Volume) (string, error) {
		p, err := libvirt.UploadFile(ctx, d, pool, file, v, nil)
		if err != nil {
			return "", fmt.Errorf("uploading %s: %w", file, err)
		}
		l.onClose("deleting volume "+v.Name, func() error { return d.DeleteVolume(pool, v.Name) })
		return p, nil
	}
	base, err := upload(l.Image, libvirt.Volume{Name: "image.qcow2", Format: "qcow2"})
	if err != nil {
		return err
	}
	var cdroms []string
	for _, iso := range []string{cidataISO, filepath.Join(o.WorkDir, "join-seed.iso")} {
		p, err := upload(iso, libvirt.Volume{Name: filepath.Base(iso), Format: "raw"})
		if err != nil {
			return err
		}
		cdroms = append(cdroms, p)
	}
	disk, err := d.CreateVolume(pool, libvirt.Volume{Name: vmName + ".qcow2", Format: "qcow2", Capacity: size,
		BackingPath: base, BackingFormat: "qcow2"})
	if err != nil {
		return err
	}
	l.onClose("deleting volume "+vmName+".qcow2", func() error { return d.DeleteVolume(pool, vmName+".qcow2") })

	port, err := freePort()
	if err != nil {
		return err
	}
	// virtlogd writes it; the work dir is removed at the end.
	l.SerialLog = filepath.Join(o.WorkDir, "serial.log")
	x, err := libvirt.VM{Name: vmName, Accelerator: o.Accelerator, CPUs: 2, MemoryMiB: 2048, Disk: disk,
		CDROMs: cdroms, SSHPort: port, SerialLog: l.SerialLog}.DomainXML()
	if err != nil {
		return err
	}
	if err := d.DefineDomain(x); err != nil {
		return err
	}
	l.VMName = vmName
	l.onClose("removing domain "+vmName+" (virsh destroy "+vmName+"; virsh undefine "+vmName+")", func() error {
		derr := d.DestroyDomain(vmName)
		if uerr := d.UndefineDomain(vmName); uerr != nil {
			return uerr
		}
		return derr
	})
	if err := d.StartDomain(vmName); err != nil {
		return err
	}
	l.ssh = &sshTarget{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), key: key}
	l.say("node %s booting (%s, 2 vCPU, 2048 MiB) from an overlay on %s; ssh -i %s -p %d %s@127.0.0.1; serial console %s",
		vmName, o.Accelerator, filepath.Base(l.Image), keyFile, port, guestUser, l.SerialLog)
	return nil
}

// waitReady waits until the Node exists, is Ready and carries every label
// asked for, printing each change of its state.
func (l *Lab) waitReady(ctx context.Context) error {
	client, err := l.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.ReadyTimeout)
	defer cancel()
	last, lastSaid := "", time.Now()
	var joinerLines int
	for i := 0; ; i++ {
		state := l.nodeState(ctx, client)
		if state != last || time.Since(lastSaid) > time.Minute {
			l.say("node %s: %s", l.NodeName, state)
			last, lastSaid = state, time.Now()
		}
		if state == "Ready, labelled" {
			l.showJoinerLog(ctx, &joinerLines)
			return nil
		}
		if i%5 == 0 {
			l.showJoinerLog(ctx, &joinerLines)
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				kubelet, _ := l.Guest(context.Background(), "journalctl -u kubelet.service -n 25 --no-pager -o cat")
				return fmt.Errorf("node %s not Ready and labelled after %s (last: %s); the kubelet's last log lines:\n%s\n`joiner doctor --node %s` explains a NotReady node; the serial console is %s",
					l.NodeName, l.opts.ReadyTimeout, last, kubelet, l.NodeName, l.SerialLog)
			}
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// showJoinerLog prints the lines the node's joiner logged since the last
// call (its log file, read over SSH); it stays quiet while there is no SSH.
func (l *Lab) showJoinerLog(ctx context.Context, seen *int) {
	if l.ssh == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := l.Guest(ctx, fmt.Sprintf("tail -n +%d %s 2>/dev/null || true", *seen+1, config.DefaultPaths().Log))
	if err != nil {
		return
	}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line != "" {
			*seen++
			l.say("    joiner | %s", line)
		}
	}
}

// nodeState is a one-line account of the node, "Ready, labelled" once done.
func (l *Lab) nodeState(ctx context.Context, client kubernetes.Interface) string {
	n, err := client.CoreV1().Nodes().Get(ctx, l.NodeName, metav1.GetOptions{})
	if err != nil {
		if l.ssh != nil && !l.ssh.reachable() {
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

// Guest runs a shell command on the node as root (through sudo) and
// returns its combined output.
func (l *Lab) Guest(ctx context.Context, command string) (string, error) {
	if l.ssh == nil {
		return "", fmt.Errorf("the node has not been booted")
	}
	return l.ssh.run(ctx, "sudo sh -c "+shellQuote(command))
}

// WaitSSH waits until the node answers over SSH (after a reboot, say).
func (l *Lab) WaitSSH(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		_, err := l.ssh.run(ctx, "true")
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no SSH to the node within %s: %w", timeout, err)
		case <-time.After(3 * time.Second):
		}
	}
}

type sshTarget struct {
	addr string
	key  ssh.Signer
}

func (s *sshTarget) dial(ctx context.Context) (*ssh.Client, error) {
	cfg := &ssh.ClientConfig{
		User: guestUser,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(s.key)},
		// The guest's host key is made at its first boot, on a port
		// forwarded from 127.0.0.1: there is nothing to check it against.
		HostKeyCallback: ssh.InsecureIgnoreHostKey(),
		Timeout:         10 * time.Second,
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return nil, err
	}
	// QEMU accepts the connection before the guest's sshd may: bound the
	// handshake, which has no timeout of its own.
	conn.SetDeadline(time.Now().Add(cfg.Timeout))
	c, chans, reqs, err := ssh.NewClientConn(conn, s.addr, cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

func (s *sshTarget) reachable() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.run(ctx, "true")
	return err == nil
}

func (s *sshTarget) run(ctx context.Context, command string) (string, error) {
	c, err := s.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer sess.Close()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := sess.CombinedOutput(command)
		done <- result{out, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		c.Close()
		r = <-done
		r.err = ctx.Err()
	}
	if r.err != nil {
		return string(r.out), fmt.Errorf("%s: %w\n%s", command, r.err, r.out)
	}
	return string(r.out), nil
}

// newSSHKey makes the lab's key for the node and writes its private half
// to file (mode 0600), for `ssh -i` while the lab runs.
func newSSHKey(file string) (ssh.Signer, string, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, "", err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, "", err
	}
	block, err := ssh.MarshalPrivateKey(priv, "kubenode-lab")
	if err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, "", err
	}
	return signer, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + " kubenode-lab", nil
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
