// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/labimages"
	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/post-processor/export"
)

// libvirtd starts libvirtd through scripts/libvirtd.sh unless it already
// answers, and stops it on Close only if it started it.
func (l *Lab) libvirtd(ctx context.Context) error {
	script := filepath.Join(l.opts.Root, "scripts", "libvirtd.sh")
	if exec.CommandContext(ctx, "bash", script, "status").Run() == nil {
		l.say("libvirtd is already running: using it")
		return nil
	}
	if out, err := exec.CommandContext(ctx, "bash", script, "start").CombinedOutput(); err != nil {
		return fmt.Errorf("scripts/libvirtd.sh start: %w\n%s", err, out)
	}
	l.onClose("stopping libvirtd (started by the lab)", func() error {
		out, err := exec.Command("bash", script, "stop").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	})
	l.say("libvirtd started")
	return nil
}

// buildImage installs the plugin into a private plugin directory and runs
// packer build on the template, streaming packer's output. With
// Options.SkipBuild it takes the image an earlier run left in ImageDir.
func (l *Lab) buildImage(ctx context.Context) error {
	o := l.opts
	if o.SkipBuild {
		l.say("not building: booting the image already in %s", o.ImageDir)
		return l.readManifest()
	}
	plugins := filepath.Join(o.WorkDir, "plugins")
	env := append(os.Environ(), "PACKER_PLUGIN_PATH="+plugins, "PACKER_CHECKPOINT_DISABLE=1",
		// packer's own temporary files go under the work dir, removed by Close.
		"TMPDIR="+filepath.Join(o.WorkDir, "tmp"))
	if err := safefile.MkdirAll(o.WorkDir, "tmp", 0o700); err != nil {
		return err
	}
	install := exec.CommandContext(ctx, o.Packer, "plugins", "install", "--path", o.Plugin, "github.com/kubenode/kubenode")
	install.Env = env
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("packer plugins install: %w\n%s", err, out)
	}

	version, images, err := l.labImages(ctx)
	if err != nil {
		return err
	}
	args := []string{"build", "-force", "-color=false",
		"-var", "kubernetes_version=" + version,
		"-var", "output_directory=" + o.ImageDir,
		"-var", "accelerator=" + o.Accelerator,
		"-var", "images=" + labimages.TemplateVar(images),
	}
	if r := o.Releases; r != nil {
		declared, err := declaredVariables(o.Template)
		if err != nil {
			return err
		}
		args = append(args, r.templateVars(declared, o.BaseDisk, o.KubernetesDir)...)
	} else {
		args = append(args,
			"-var", "base_disk="+o.BaseDisk,
			"-var", "kubernetes_dir="+o.KubernetesDir,
			// crictl comes from GitHub; the lab bakes from local files only.
			"-var", "install_crictl=false")
	}
	if o.Bootstrap == BootstrapJoiner {
		args = append(args, "-var", "joiner="+o.Joiner)
	}
	args = append(args, o.Template)
	l.say("packer %s", strings.Join(args, " "))
	began := time.Now()
	if err := l.runPacker(ctx, env, args); err != nil {
		return err
	}
	l.ImageBuild = time.Since(began)
	return l.readManifest()
}

// ProductionContainerd is the containerd release the lab gives its
// templates (their containerd_version default).
const ProductionContainerd = "2.3.7"

// Releases are what a template installs from release downloads: the
// Kubernetes release is the one in Options.KubernetesDir, the rest are
// named here.
type Releases struct {
	// Mirrors is kubenode-bake's download_mirrors: the official download
	// URLs' prefixes and where their upstream layout is served instead.
	Mirrors    map[string]string
	Containerd string // containerd_version
	CNIPlugins string // cni_plugins_version
	// NodeLabels is the template's node_labels: labels baked into the
	// image, which the joiner registers each node with.
	NodeLabels map[string]string
}

// templateVars are the variables of a build from these releases, of
// those the template declares (packer refuses a -var it does not): disk,
// a local qcow2, is its cloud image (the production examples) or base
// disk (the lab's templates, which also take the Kubernetes binaries
// from kubernetesDir). The mirror is the lab's own, plain HTTP on
// 127.0.0.1 serving files built on this machine, where nobody else is on
// the way: its checksum files are taken on trust
// (trust_http_mirror_checksums) rather than pinned in artifact_checksums.
func (r *Releases) templateVars(declared map[string]bool, disk, kubernetesDir string) []string {
	var args []string
	add := func(name, value string) {
		if declared[name] {
			args = append(args, "-var", name+"="+value)
		}
	}
	add("cloud_image", disk)
	add("cloud_image_checksum", "none")
	add("base_disk", disk)
	add("kubernetes_dir", kubernetesDir)
	add("download_mirrors", hclMap(r.Mirrors))
	add("trust_http_mirror_checksums", "true")
	if len(r.NodeLabels) > 0 {
		add("node_labels", hclMap(r.NodeLabels))
	}
	if r.Containerd != "" {
		add("containerd_version", r.Containerd)
	}
	if r.CNIPlugins != "" {
		add("cni_plugins_version", r.CNIPlugins)
	}
	return args
}

// templateVariable is a variable block's first line in a template.
var templateVariable = regexp.MustCompile(`(?m)^variable\s+"([^"]+)"`)

// declaredVariables are the names of the variables template declares.
func declaredVariables(template string) (map[string]bool, error) {
	src, err := os.ReadFile(template)
	if err != nil {
		return nil, fmt.Errorf("reading the template: %w", err)
	}
	out := map[string]bool{}
	for _, m := range templateVariable.FindAllStringSubmatch(string(src), -1) {
		out[m[1]] = true
	}
	return out, nil
}

// hclMap is m as an HCL map(string) value, its keys sorted.
func hclMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var kv []string
	for _, k := range keys {
		kv = append(kv, fmt.Sprintf("%q = %q", k, m[k]))
	}
	return "{" + strings.Join(kv, ", ") + "}"
}

// labImages builds (or takes from the cache) the images the lab's nodes
// run, since no registry is assumed: the pause image the bake's version
// table names for the kubeadm in KubernetesDir, compiled from that
// release's build/pause/linux/pause.c, and a busybox image from Debian's
// busybox-static. It returns that Kubernetes version too.
func (l *Lab) labImages(ctx context.Context) (string, []labimages.Image, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(l.opts.KubernetesDir, "kubeadm"), "version", "-o", "short").Output()
	if err != nil {
		return "", nil, fmt.Errorf("kubeadm version -o short: %w", err)
	}
	version := strings.TrimSpace(string(out))
	release, err := versions.LookupKubernetes(version)
	if err != nil {
		return "", nil, err
	}
	pause := release.PauseImage
	src, err := labimages.KubernetesSourceDir(ctx, version)
	if err != nil {
		return "", nil, err
	}
	images, err := labimages.Build(ctx, labimages.Options{PauseRef: pause, KubernetesSourceDir: src})
	if err != nil {
		return "", nil, fmt.Errorf("the lab's images: %w", err)
	}
	for _, img := range images {
		l.say("preloading %s (%s, built here)", img.Ref, img.Digest)
	}
	return version, images, nil
}

// readManifest finds the image through the manifest kubenode-export wrote
// into ImageDir, and checks that kubenode-bake ran.
func (l *Lab) readManifest() error {
	o := l.opts
	l.Manifest = filepath.Join(o.ImageDir, export.ManifestFile)
	data, err := os.ReadFile(l.Manifest)
	if err != nil {
		return fmt.Errorf("no image manifest (run without -skip-build to build one): %w", err)
	}
	var m export.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("%s: %w", l.Manifest, err)
	}
	for _, out := range m.Outputs {
		if out.Format == "qcow2" {
			l.Image = filepath.Join(o.ImageDir, out.File)
		}
	}
	if l.Image == "" {
		return fmt.Errorf("%s lists no qcow2 output", l.Manifest)
	}
	if m.Baked == nil {
		return fmt.Errorf("%s: baked is null: did kubenode-bake run?", l.Manifest)
	}
	if b := m.Baked.Bootstrap; b != "" && b != o.Bootstrap {
		return fmt.Errorf("%s: the image was baked with bootstrap = %q, and the lab runs -bootstrap %s: build it with -bootstrap %s, or boot it with -bootstrap %s", l.Manifest, b, o.Bootstrap, o.Bootstrap, b)
	}
	for _, img := range m.Baked.Images {
		if strings.HasPrefix(img.Name, labimages.WorkloadRepository+":") {
			l.WorkloadImage = img.Name
		}
	}
	l.kubernetesVersion = m.Baked.Kubernetes
	l.say("image %s (kubernetes %s, containerd %s, %d images preloaded)", l.Image, m.Baked.Kubernetes, m.Baked.Containerd, len(m.Baked.Images))
	return nil
}

// runPacker runs packer in its own process group with its output prefixed
// into the progress. On cancellation it interrupts packer (the whole group:
// packer forks itself and its plugins) and waits for packer's own cleanup,
// which removes the build VM and its storage.
func (l *Lab) runPacker(ctx context.Context, env, args []string) error {
	cmd := exec.Command(l.opts.Packer, args...)
	cmd.Dir = l.opts.Root
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting packer: %w", err)
	}
	var tail []string
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			l.say("    packer | %s", line)
			if tail = append(tail, line); len(tail) > 30 {
				tail = tail[1:]
			}
		}
		io.Copy(io.Discard, pr)
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()

	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		l.say("interrupting packer (it removes its build VM and storage)")
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case err = <-done:
		case <-time.After(3 * time.Minute):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-done
		}
	}
	<-copied
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("packer build failed: %w (its last lines are above)", err)
	}
	return nil
}
