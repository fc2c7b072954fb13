package bake

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/hashicorp/hcl/v2/hcldec"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	joinerconfig "github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
)

// Provisioner is kubenode-bake.
type Provisioner struct {
	config Config
}

// ConfigSpec is the HCL2 spec (generated).
func (p *Provisioner) ConfigSpec() hcldec.ObjectSpec { return p.config.FlatMapstructure().HCL2Spec() }

// Prepare validates the configuration.
func (p *Provisioner) Prepare(raws ...interface{}) error { return p.config.Prepare(raws...) }

// linuxStaging is where artifacts and scripts go on a Linux guest.
const linuxStaging = "/var/tmp/kubenode-bake"

// Provision bakes the guest.
func (p *Provisioner) Provision(ctx context.Context, ui packersdk.Ui, comm packersdk.Communicator, _ map[string]interface{}) error {
	c := &p.config
	if err := c.checkImageArchives(); err != nil {
		return err
	}
	guest := c.GuestOS
	r := &remote{comm: comm, ui: ui}
	if guest == "" {
		code, out, err := r.exec(ctx, "uname -s")
		if err != nil {
			return fmt.Errorf("asking the guest for its OS: %w", err)
		}
		guest = "windows"
		if code == 0 && strings.TrimSpace(out) == "Linux" {
			guest = "linux"
		}
		ui.Say(fmt.Sprintf("kubenode-bake: the guest runs %s", guest))
	}
	if guest == "windows" {
		if c.KeepBuildAccount {
			return fmt.Errorf("keep_build_account: the guest runs Windows, where generalize keeps the built-in Administrator (with clone_admin_password) and disables any other build account; remove keep_build_account from this build")
		}
		return p.provisionWindows(ctx, ui, comm)
	}
	if c.WindowsUpdate {
		return fmt.Errorf("windows_update: the guest runs Linux, which Windows Update does not update; remove windows_update from this build (update a Linux guest's packages with a shell provisioner)")
	}
	return p.provisionLinux(ctx, ui, r)
}

func (p *Provisioner) provisionLinux(ctx context.Context, ui packersdk.Ui, r *remote) error {
	c := &p.config
	plan, arts, err := c.linuxPlan()
	if err != nil {
		return err
	}
	ui.Say(fmt.Sprintf("kubenode-bake: Kubernetes %s, containerd from %s, cni %s, pause image %s",
		plan.KubernetesVersion, c.ContainerdSource, c.CNI, plan.PauseImage))
	ui.Say(crictlSummary(plan.CrictlVersion))
	arts, err = c.resolve(ctx, ui, arts)
	if err != nil {
		return err
	}
	if arts, err = c.linuxImages(ui, &plan, arts); err != nil {
		return err
	}

	_, uid, err := r.exec(ctx, "id -u")
	uid = strings.TrimSpace(uid)
	if err != nil {
		return err
	}
	if uid != "0" {
		r.sudo = "sudo -n "
		if code, _, err := r.exec(ctx, "sudo -n true"); err != nil || code != 0 {
			return errors.New("the communicator's user is not root and cannot sudo without a password: kubenode-bake needs one of both")
		}
	}
	if plan.Generalize && !c.KeepBuildAccount {
		// The communicator's user is the build account (sudo runs the
		// scripts as root, so they cannot ask themselves).
		code, name, err := r.exec(ctx, "id -un")
		name = strings.TrimSpace(name)
		if err != nil || code != 0 || name == "" {
			return fmt.Errorf("asking the guest for the build account's name (`id -un`): exit %d, %v: %s", code, err, name)
		}
		plan.LockAccount = name
		ui.Say(fmt.Sprintf("kubenode-bake: generalize locks the build account %s on the first boot of every VM from this image (keep_build_account = true keeps it)", name))
	}
	// Owned by the communicator's user, who uploads into it; private.
	if _, err := r.run(ctx, "staging", r.sudo+"install -d -m 0700 -o "+q(uid)+" "+q(linuxStaging)); err != nil {
		return err
	}
	changed := 0
	images := []baked.Image{}
	steps := LinuxSteps(plan)
	runStep := func(i int) error {
		s := steps[i]
		ui.Say(fmt.Sprintf("kubenode-bake [%s]", s.Name))
		script := path.Join(linuxStaging, fmt.Sprintf("%02d-%s.sh", i+1, s.Name))
		if err := r.comm.Upload(script, strings.NewReader(string(s.Script)), nil); err != nil {
			return fmt.Errorf("step %s: uploading its script: %w", s.Name, err)
		}
		out, err := r.run(ctx, s.Name, r.sudo+"sh "+q(script))
		if err != nil {
			return selfCheckFailure(s.Name, out, err)
		}
		if s.Name == stepImages {
			images = parseImageListing(out)
		}
		changed += strings.Count(out, "changed: ")
		return nil
	}
	// The guest settles (cloud-init, the dpkg lock) while nothing of the
	// bake's is on it yet.
	if err := runStep(0); err != nil {
		return err
	}
	ui.Say(fmt.Sprintf("kubenode-bake: uploading %d artifacts", len(arts)))
	var sums strings.Builder
	for _, a := range arts {
		remote := path.Join(linuxStaging, a.FileName)
		ui.Message(fmt.Sprintf("%s: %s -> %s", a.Name, a.Local, remote))
		if err := r.upload(a.Local, remote); err != nil {
			return fmt.Errorf("uploading artifact %s: %w", a.Name, err)
		}
		fmt.Fprintf(&sums, "%s  %s\n", a.SHA256, a.FileName)
	}
	// The guest checks what arrived before anything is installed.
	check := fmt.Sprintf("cd %s && printf %%s %s | sha256sum --check --strict -", q(linuxStaging), q(sums.String()))
	if _, err := r.run(ctx, "verify-artifacts", check); err != nil {
		return fmt.Errorf("the artifacts on the guest do not match their checksums: %w", err)
	}
	for i := 1; i < len(steps); i++ {
		if err := runStep(i); err != nil {
			return err
		}
	}
	facts, err := p.linuxFacts(ctx, r, plan, arts)
	if err != nil {
		return err
	}
	facts.Images = images
	guest, err := linuxGuestOS(ctx, r)
	if err != nil {
		return err
	}
	if err := baked.Write(c.PackerBuildName, baked.Record{Facts: facts, OS: guest}); err != nil {
		return fmt.Errorf("recording what was baked for kubenode-export: %w", err)
	}
	ui.Say(fmt.Sprintf("kubenode-bake: done, %d changes (Kubernetes %s, containerd %s, CNI plugins %s)", changed, facts.Kubernetes, facts.Containerd, facts.CNIPlugins))
	return nil
}

// linuxFacts asks the guest what it now runs, for the image's manifest.
func (p *Provisioner) linuxFacts(ctx context.Context, r *remote, plan LinuxPlan, arts []Artifact) (baked.Facts, error) {
	f := baked.Facts{Kubernetes: plan.KubernetesVersion, PauseImage: plan.PauseImage, Checksums: map[string]string{}}
	for _, a := range arts {
		f.Checksums[a.Name] = a.SHA256
	}
	ask := func(what, command string) (string, error) {
		code, out, err := r.exec(ctx, command)
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
	if p.config.ContainerdSource == "package" {
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

// linuxGuestOS asks the guest which OS it runs, for the image's manifest.
func linuxGuestOS(ctx context.Context, r *remote) (baked.GuestOS, error) {
	code, out, err := r.exec(ctx, osReleaseCommand)
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

// linuxPlan turns the configuration into the Linux plan and the artifacts
// it needs.
func (c *Config) linuxPlan() (LinuxPlan, []Artifact, error) {
	k8s, err := LookupKubernetes(c.KubernetesVersion)
	if err != nil {
		return LinuxPlan{}, nil, err
	}
	plan := LinuxPlan{
		KubernetesVersion: k8s.Version,
		PauseImage:        c.PauseImage,
		ContainerdSource:  c.ContainerdSource,
		CNI:               c.CNI,
		BridgeSubnet:      c.BridgeSubnet,
		CgroupDriver:      "systemd",
		Proxy:             Proxy{HTTP: c.HTTPProxy, HTTPS: c.HTTPSProxy, No: c.NoProxy},
		Generalize:        *c.Generalize,
		Staging:           linuxStaging,
		SettleTimeout:     c.SettleTimeout,
	}
	if plan.PauseImage == "" {
		plan.PauseImage = k8s.PauseImage
	}
	arts := k8s.LinuxArtifacts()
	if c.ContainerdSource == "tarball" {
		ctr, err := LookupContainerd(c.ContainerdVersion)
		if err != nil {
			return LinuxPlan{}, nil, err
		}
		cni, err := LookupCNIPlugins(c.CNIPluginsVersion)
		if err != nil {
			return LinuxPlan{}, nil, err
		}
		ctrArts := ctr.LinuxArtifacts()
		cniArt := cni.LinuxArtifact()
		arts = append(append(arts, ctrArts...), cniArt)
		plan.ContainerdTarball, plan.RuncBinary, plan.CNITarball = ctrArts[0].FileName, ctrArts[1].FileName, cniArt.FileName
	}
	if arts, err = c.linuxBasics(&plan, k8s, arts); err != nil {
		return LinuxPlan{}, nil, err
	}
	if *c.InstallJoiner {
		arts = append(arts, Artifact{Name: ArtifactJoiner, FileName: "kubenode-joiner"})
		plan.JoinerConfig, err = c.joinerConfig(joinerconfig.DefaultCRISocket)
		if err != nil {
			return LinuxPlan{}, nil, err
		}
	}
	return plan, arts, nil
}

// joinerConfig is the joiner's configuration baked into the image: how the
// node registers. The seed disc adds the join credentials at first boot.
func (c *Config) joinerConfig(criSocket string) ([]byte, error) {
	jc := joinerconfig.New()
	jc.CRISocket = criSocket
	jc.Labels = c.NodeLabels
	for _, name := range sortedKeys(c.KubeletExtraArgs) {
		jc.KubeletExtraArgs = append(jc.KubeletExtraArgs, kubeadmv1.Arg{Name: name, Value: c.KubeletExtraArgs[name]})
	}
	return jc.Marshal()
}
