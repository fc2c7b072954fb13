// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/deliver"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// Bake bakes a Linux guest as img describes it (NewPlan) and returns
// what was baked, for the image's manifest.
func Bake(ctx context.Context, ui packersdk.Ui, r *remote.Remote, img node.Image, srv *deliver.Server) (baked.Record, error) {
	plan, err := NewPlan(img)
	if err != nil {
		return baked.Record{}, err
	}
	rec, changed, err := run(ctx, ui, r, plan, img.Artifacts, srv)
	if err != nil {
		return baked.Record{}, err
	}
	rec.Facts.Bootstrap = img.Bootstrap
	f := rec.Facts
	ui.Say(fmt.Sprintf("kubenode-bake: done, %d changes (Kubernetes %s, containerd %s, CNI plugins %s)", changed, f.Kubernetes, f.Containerd, f.CNIPlugins))
	return rec, nil
}

// run bakes a Linux guest over the communicator: as root (or with sudo),
// the artifacts put in Staging and checked there (downloaded by the guest
// from srv, or uploaded when srv is nil; see transfer), then each of
// Steps' scripts, the first of which (settle) runs before the transfer. It
// returns what was baked, for the image's manifest, and how many changes
// the steps made.
func run(ctx context.Context, ui packersdk.Ui, r *remote.Remote, plan Plan, arts []versions.Artifact, srv *deliver.Server) (baked.Record, int, error) {
	_, uid, err := r.Exec(ctx, "id -u")
	uid = strings.TrimSpace(uid)
	if err != nil {
		return baked.Record{}, 0, err
	}
	if uid != "0" {
		r.Sudo = "sudo -n "
		if code, _, err := r.Exec(ctx, "sudo -n true"); err != nil || code != 0 {
			return baked.Record{}, 0, errors.New("the communicator's user is not root and cannot sudo without a password: kubenode-bake needs one of both")
		}
	}
	if plan.Generalize && !plan.KeepBuildAccount {
		// The communicator's user is the build account (sudo runs the
		// scripts as root, so they cannot ask themselves).
		code, name, err := r.Exec(ctx, "id -un")
		name = strings.TrimSpace(name)
		if err != nil || code != 0 || name == "" {
			return baked.Record{}, 0, fmt.Errorf("asking the guest for the build account's name (`id -un`): exit %d, %v: %s", code, err, name)
		}
		plan.LockAccount = name
		ui.Say(fmt.Sprintf("kubenode-bake: generalize locks the build account %s on the first boot of every VM from this image (keep_build_account = true keeps it)", name))
	}
	// Owned by the communicator's user, who uploads into it; private.
	if _, err := r.Run(ctx, "staging", r.Sudo+"install -d -m 0700 -o "+q(uid)+" "+q(Staging)); err != nil {
		return baked.Record{}, 0, err
	}
	changed := 0
	images := []baked.Image{}
	var kubeadmImages []string
	steps := Steps(plan)
	runStep := func(i int) error {
		s := steps[i]
		ui.Say(fmt.Sprintf("kubenode-bake [%s]", s.Name))
		script := path.Join(Staging, fmt.Sprintf("%02d-%s.sh", i+1, s.Name))
		if err := r.Comm.Upload(script, strings.NewReader(string(s.Script)), nil); err != nil {
			return fmt.Errorf("step %s: uploading its script: %w", s.Name, err)
		}
		out, err := r.Run(ctx, s.Name, r.Sudo+"sh "+q(script))
		if err != nil {
			return node.SelfCheckFailure(s.Name, out, err)
		}
		if s.Name == node.StepImages {
			images = node.ParseImageListing(out)
			kubeadmImages = node.ParseKubeadmImages(out)
		}
		changed += strings.Count(out, "changed: ")
		if s.Name == stepPrerequisites && plan.ContainerdSource == "package" {
			return checkPackagedContainerd(ctx, ui, r, plan.Kubernetes, plan.PackageContainerd)
		}
		return nil
	}
	// The guest settles (cloud-init, the dpkg lock) while nothing of the
	// bake's is on it yet.
	if err := runStep(0); err != nil {
		return baked.Record{}, 0, err
	}
	if err := transfer(ctx, ui, r, Staging, arts, srv); err != nil {
		return baked.Record{}, 0, err
	}
	for i := 1; i < len(steps); i++ {
		if err := runStep(i); err != nil {
			return baked.Record{}, 0, err
		}
	}
	facts, err := askFacts(ctx, r, plan, arts)
	if err != nil {
		return baked.Record{}, 0, err
	}
	facts.Images, facts.KubeadmImages = images, kubeadmImages
	guest, err := askGuestOS(ctx, r)
	if err != nil {
		return baked.Record{}, 0, err
	}
	typ, pkgs, err := askPackages(ctx, r)
	if err != nil {
		return baked.Record{}, 0, err
	}
	return baked.Record{Facts: facts, OS: guest, Inventory: baked.Inventory{PackageType: typ, Packages: pkgs}}, changed, nil
}

// checkPackagedContainerd holds the containerd the distribution's package
// installed (`containerd --version`) to the minor of the release
// containerd_version declared (declared; "" when unset) and to
// containerd's Kubernetes support matrix for k, before containerd is
// configured: packer validate held only what it could know, the declared
// release or, unset, the packages of the distributions the version table
// knows. Each refusal names the guest's OS.
func checkPackagedContainerd(ctx context.Context, ui packersdk.Ui, r *remote.Remote, k versions.KubernetesRelease, declared string) error {
	code, out, err := r.Exec(ctx, "containerd --version")
	if err != nil || code != 0 {
		return fmt.Errorf("asking the guest for the version of its packaged containerd (`containerd --version`): exit %d, %v: %s", code, err, strings.TrimSpace(out))
	}
	v, err := versions.ContainerdVersionFromOutput(out)
	if err != nil {
		return err
	}
	// The OS's name is for the message only.
	guest, _ := askGuestOS(ctx, r)
	if err := versions.CheckPackagedContainerd(k, declared, v, guest.Name); err != nil {
		return err
	}
	ui.Say(fmt.Sprintf("kubenode-bake: the distribution's containerd %s is one containerd's Kubernetes support matrix lists for Kubernetes %s", v, k.Minor))
	return nil
}

// Staging is where artifacts and scripts go on a Linux guest.
const Staging = "/var/tmp/kubenode-bake"

// askFacts asks the guest what it now runs, for the image's manifest.
func askFacts(ctx context.Context, r *remote.Remote, plan Plan, arts []versions.Artifact) (baked.Facts, error) {
	f := baked.Facts{Kubernetes: plan.KubernetesVersion, PauseImage: plan.PauseImage, Checksums: map[string]string{}}
	for _, a := range arts {
		f.Checksums[a.Name] = a.SHA256
	}
	ask := func(what, command string) (string, error) {
		code, out, err := r.Exec(ctx, command)
		out = strings.TrimSpace(out)
		if err != nil || code != 0 {
			return "", fmt.Errorf("asking the guest for the %s version (`%s`): exit %d, %v: %s", what, command, code, err, out)
		}
		return out, nil
	}
	var err error
	if f.Containerd, err = ask("containerd", "containerd --version | awk '{print $3}'"); err != nil {
		return f, err
	}
	if f.Runc, err = ask("runc", runcCommand); err != nil {
		return f, err
	}
	if plan.ContainerdSource == "package" {
		f.CNIPlugins, err = ask("CNI plugins", "dpkg-query -W -f='${Version}' containernetworking-plugins 2>/dev/null || rpm -q --qf '%{VERSION}' containernetworking-plugins")
	} else {
		f.CNIPlugins = strings.TrimPrefix(strings.TrimSuffix(plan.CNITarball, ".tgz"), "cni-plugins-linux-amd64-")
	}
	if err != nil {
		return f, err
	}
	if len(plan.JoinerConfig) > 0 {
		if f.Joiner, err = ask("joiner", units.LinuxJoinerPath+" version | awk '{print $2}'"); err != nil {
			return f, err
		}
	}
	return f, nil
}

// osReleaseCommand prints os-release's ID, VERSION_ID and PRETTY_NAME, one
// a line; /usr/lib/os-release is the fallback os-release(5) names.
const osReleaseCommand = `sh -c 'if [ -r /etc/os-release ]; then . /etc/os-release; else . /usr/lib/os-release; fi && printf "%s\n%s\n%s\n" "${ID:-}" "${VERSION_ID:-}" "${PRETTY_NAME:-}"'`

// askGuestOS asks the guest which OS it runs, for the image's manifest.
func askGuestOS(ctx context.Context, r *remote.Remote) (baked.GuestOS, error) {
	code, out, err := r.Exec(ctx, osReleaseCommand)
	if err != nil || code != 0 {
		return baked.GuestOS{}, fmt.Errorf("asking the guest for its OS (/etc/os-release): exit %d, %v: %s", code, err, strings.TrimSpace(out))
	}
	return parseOSRelease(out), nil
}

// parseOSRelease reads osReleaseCommand's output.
func parseOSRelease(out string) baked.GuestOS {
	lines := strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n")
	for len(lines) < 3 {
		lines = append(lines, "")
	}
	return baked.GuestOS{ID: strings.TrimSpace(lines[0]), Version: strings.TrimSpace(lines[1]), Name: strings.TrimSpace(lines[2])}
}
