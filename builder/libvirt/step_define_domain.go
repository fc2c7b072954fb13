// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net/url"
	"os"
	"path/filepath"
	"regexp"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/template/interpolate"
)

// stepDefineDomain defines the build VM. Cleanup powers it off and
// undefines it (with its NVRAM and TPM state), after printing the tail of
// the serial console when the build failed.
//
// Uses: config, driver, ui, disk_path, cdroms, host_port. Produces: serial_log.
type stepDefineDomain struct {
	name string
}

func (s *stepDefineDomain) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	d := state.Get(stateDriver).(Driver)
	ui := state.Get(stateUI).(packersdk.Ui)

	spec, x, err := c.renderDomain(state)
	if err != nil {
		return halt(state, ui, err)
	}
	log.Printf("Domain XML:\n%s", vncPasswdRE.ReplaceAllString(x, `passwd="(hidden)"`))
	ui.Say(fmt.Sprintf("Defining domain %s (%s, %d vCPU, %d MiB, %s firmware)", c.VMName, spec.Accelerator, spec.CPUs, spec.MemoryMiB, spec.Firmware))
	if err := d.DefineDomain(x); err != nil {
		if len(c.DomainXMLPatches) > 0 && isInvalidDomainXML(err) {
			return halt(state, ui, fmt.Errorf("%w (the domain XML after domain_xml_patch: libvirt's schema refuses it; fix the patch, PACKER_LOG=1 shows the XML)", err))
		}
		return halt(state, ui, fmt.Errorf("%w (is a domain named %q left from an earlier build? `virsh undefine %[2]s --nvram` removes it)", err, c.VMName))
	}
	s.name = c.VMName
	state.Put(stateSerialLog, spec.SerialLog)
	return multistep.ActionContinue
}

// vncPasswdRE finds vnc_password in the domain XML, which Packer's log
// would otherwise hold in clear.
var vncPasswdRE = regexp.MustCompile(`passwd="[^"]*"`)

func (s *stepDefineDomain) Cleanup(state multistep.StateBag) {
	if s.name == "" {
		return
	}
	d := state.Get(stateDriver).(Driver)
	ui := state.Get(stateUI).(packersdk.Ui)
	_, failed := state.GetOk("error")
	_, cancelled := state.GetOk(multistep.StateCancelled)
	if failed && !cancelled {
		if p, _ := state.Get(stateSerialLog).(string); p != "" {
			if tail := tailFile(p, 20); tail != "" {
				ui.Error("Last lines of the serial console (" + p + "):\n" + tail)
			}
		}
	}
	if err := d.DestroyDomain(s.name); err != nil {
		ui.Error(fmt.Sprintf("cleanup: %v (virsh destroy %s)", err, s.name))
	}
	if err := d.UndefineDomain(s.name); err != nil {
		// virsh before libvirt 8.9 has no --tpm: suggest it only when needed.
		hint := "virsh undefine " + s.name + " --nvram"
		if c, ok := state.Get(stateConfig).(*Config); ok && c.TPM {
			hint += " --tpm"
		}
		ui.Error(fmt.Sprintf("cleanup: %v (%s)", err, hint))
	}
	s.name = ""
}

// renderDomain builds the domain XML: the VM's shape from the config and
// the earlier steps, qemuargs, then domain_xml_patch.
func (c *Config) renderDomain(state multistep.StateBag) (domainSpec, string, error) {
	spec, err := c.domainSpec(state)
	if err != nil {
		return spec, "", err
	}
	x, err := domainXML(spec)
	if err != nil {
		return spec, "", fmt.Errorf("building the domain XML: %w", err)
	}
	x, err = patchDomainXML(x, c.DomainXMLPatches)
	return spec, x, err
}

// checkDomainXMLPatches applies domain_xml_patch to the domain this
// config would define, with stand-ins for what only the build knows (the
// volumes' paths, the forwarded port), so that a path matching nothing or
// malformed XML fails `packer validate`.
func (c *Config) checkDomainXMLPatches() []error {
	if len(c.DomainXMLPatches) == 0 {
		return nil
	}
	var errs []error
	for i, p := range c.DomainXMLPatches {
		errs = append(errs, p.check(i)...)
	}
	if len(errs) > 0 || c.HypervEnlightenments == nil {
		return errs
	}
	state := new(multistep.BasicStateBag)
	state.Put(stateDiskPath, "/validate/"+c.VMName+".qcow2")
	var cds []string
	for i := 0; i < c.cdromCount(); i++ {
		cds = append(cds, fmt.Sprintf("/validate/%s-cd%d.iso", c.VMName, i))
	}
	state.Put(stateCDROMs, cds)
	state.Put(stateHostPort, c.HostPortMin)
	if _, _, err := c.renderDomain(state); err != nil {
		return []error{err}
	}
	return nil
}

// cdromCount is the number of CD-ROMs the build attaches: the install
// ISO, virtio_win_iso, extra_cdroms and the seed disc.
func (c *Config) cdromCount() int {
	n := len(c.ExtraCDROMs)
	if c.source == sourceInstallISO {
		n++
	}
	if c.VirtioWinISO != "" {
		n++
	}
	if c.Windows != nil || c.Linux != nil || len(c.SeedFiles) > 0 {
		n++
	}
	return n
}

// domainSpec gathers the VM's shape from the config and the earlier steps.
func (c *Config) domainSpec(state multistep.StateBag) (domainSpec, error) {
	spec := domainSpec{
		Name: c.VMName, Accelerator: c.Accelerator, Machine: c.MachineType,
		CPUs: c.CPUs, CPU: c.cpuSpec(), MemoryMiB: c.Memory, Firmware: c.Firmware, SecureBoot: c.SecureBoot,
		TPM: c.TPM, HyperV: *c.HypervEnlightenments, NICModel: c.NICModel,
		Disk:      diskSpec{Path: state.Get(stateDiskPath).(string), Format: "qcow2", Bus: c.DiskBus},
		VNCListen: c.VNCBindAddress, VNCPassword: c.VNCPassword,
	}
	if cds, ok := state.GetOk(stateCDROMs); ok {
		spec.CDROMs = cds.([]string)
	}
	outDir, err := filepath.Abs(c.OutputDir)
	if err != nil {
		return spec, err
	}
	data := qemuArgsData{OutputDir: outDir, HTTPDir: c.HTTPDir}
	data.HTTPIP, _ = state.Get(stateHTTPIP).(string)
	data.HTTPPort, _ = state.Get("http_port").(int)
	if c.Network == "user" {
		data.SSHHostPort, _ = state.Get(stateHostPort).(int)
	}
	if spec.QEMUArgs, err = c.renderQemuArgs(data); err != nil {
		return spec, err
	}
	switch {
	case c.Network == "user":
		if port, ok := state.GetOk(stateHostPort); ok {
			spec.Net.UserForward = &portForward{HostPort: port.(int), GuestPort: c.Comm.Port()}
		} else {
			spec.Net.UserForward = &portForward{}
		}
	case c.Bridge != "":
		spec.Net.Bridge = c.Bridge
	default:
		spec.Net.Network = c.Network
	}
	// The serial log is written by the hypervisor's virtlogd: into the
	// output directory when the hypervisor is this machine.
	if isLocalURI(c.LibvirtURI) {
		abs, err := filepath.Abs(filepath.Join(c.OutputDir, "serial.log"))
		if err != nil {
			return spec, err
		}
		spec.SerialLog = abs
	}
	return spec, nil
}

// isLocalURI reports whether the hypervisor is this machine.
func isLocalURI(uri string) bool {
	u, err := url.Parse(uri)
	return err == nil && u.Host == ""
}

// tailFile returns the last n lines of a file, or "".
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(data, "\r\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// qemuArgsData is what qemuargs templates can use, the qemu builder's set.
type qemuArgsData struct {
	HTTPIP      string
	HTTPPort    int
	HTTPDir     string
	OutputDir   string
	Name        string
	SSHHostPort int
}

// renderQemuArgs fills the templates in qemuargs with data.
func (c *Config) renderQemuArgs(data qemuArgsData) ([][]string, error) {
	if len(c.QemuArgs) == 0 {
		return nil, nil
	}
	data.Name = c.VMName
	ctx := c.ctx
	ctx.Data = &data
	out := make([][]string, len(c.QemuArgs))
	for i, arg := range c.QemuArgs {
		out[i] = make([]string, len(arg))
		for j, v := range arg {
			r, err := interpolate.Render(v, &ctx)
			if err != nil {
				return nil, fmt.Errorf("qemuargs[%d][%d]: %w", i, j, err)
			}
			out[i][j] = r
		}
	}
	return out, nil
}
