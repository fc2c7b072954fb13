// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package export is the kubenode-export post-processor: it turns the
// builder's disk into finished images (qemu-img), with sha256 checksum
// files and a manifest of what the image is and holds.
package export

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	registryimage "github.com/hashicorp/packer-plugin-sdk/packer/registry/image"
	"github.com/mitchellh/mapstructure"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/confighash"
	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
	"github.com/kubenode/packer-plugin-kubenode/version"
)

// ArtifactID identifies this post-processor's artifacts.
const ArtifactID = "kubenode.export"

// PostProcessor is kubenode-export.
type PostProcessor struct {
	config Config
	// now is the build time written to the manifest; tests pin it.
	now func() time.Time
	// configSHA256 is the configuration's digest and templatePath the
	// template Packer names, if it does: the provenance's parameters.
	configSHA256, templatePath string
}

func (p *PostProcessor) ConfigSpec() hcldec.ObjectSpec { return p.config.FlatMapstructure().HCL2Spec() }

func (p *PostProcessor) Configure(raws ...interface{}) error {
	p.configSHA256, p.templatePath = confighash.Sum(raws...), templatePath(raws...)
	return p.config.Prepare(raws...)
}

// PostProcess writes every format of the input's disk image, then the
// containerdisk, if listed. The input
// artifact is kept unless the template says keep_input_artifact = false,
// which Packer applies to the keep this returns. Builders destroy their
// artifact by removing its directory, so when the outputs are in that
// directory the input is kept whatever the template says (forceOverride).
func (p *PostProcessor) PostProcess(ctx context.Context, ui packersdk.Ui, in packersdk.Artifact) (packersdk.Artifact, bool, bool, error) {
	c := &p.config
	for _, w := range c.warnings {
		ui.Error("kubenode-export: warning: " + w)
	}
	src, err := diskImage(in.Files())
	if err != nil {
		return nil, true, true, err
	}
	// qemu-img gets the input's absolute path: a relative "name:..." would
	// be taken for a protocol.
	absSrc, err := filepath.Abs(src)
	if err != nil {
		return nil, true, true, fmt.Errorf("source image: %w", err)
	}
	srcFormat := inputFormat(src)
	if err := checkInput(ctx, c, absSrc, srcFormat); err != nil {
		return nil, true, true, fmt.Errorf("source image: %w", err)
	}
	dir := c.OutputDir
	if dir == "" {
		dir = filepath.Dir(src)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, true, true, fmt.Errorf("output_directory: %w", err)
	}
	if err := checkOutputDir(dir, c.AllowSharedOutputDirectory); err != nil {
		return nil, true, true, err
	}
	if err := checkWritable(dir); err != nil {
		return nil, true, true, fmt.Errorf("output_directory %s is not writable: %w", dir, err)
	}
	name := c.OutputName
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))
	}
	// What the bake installed: the manifest's and the SBOM's, and the
	// containerdisk's default tag. It is removed once the export is done.
	rec, err := baked.Read(c.PackerBuildName)
	if err != nil {
		return nil, true, true, fmt.Errorf("reading what kubenode-bake installed: %w", err)
	}
	osinfo := osInfo(in)
	if rec != nil {
		osinfo = osinfo.reported(rec.OS)
	}

	var files []string
	var outputs []Output
	qcow2 := "" // this run's qcow2 output, which a containerdisk reuses
	for _, format := range c.diskFormats() {
		dst := filepath.Join(dir, name+"."+formatExt[format])
		compression := "none"
		if format == "qcow2" {
			compression = c.Compression
		}
		ui.Say(fmt.Sprintf("Writing %s (%s, compression %s, %d threads)", dst, format, compression, c.Threads))
		start := time.Now()
		args := ConvertArgs(absSrc, srcFormat, dst, format, compression, c.Threads)
		err := convert(ctx, c.QemuImgPath, args, dst, c.fileMode, func(pct int) {
			ui.Message(fmt.Sprintf("%s: %d%% (%s)", filepath.Base(dst), pct, time.Since(start).Round(time.Second)))
		})
		if err != nil {
			return nil, true, true, err
		}
		st, err := os.Stat(dst)
		if err != nil {
			return nil, true, true, err
		}
		sum, err := filehash.SHA256(dst)
		if err != nil {
			return nil, true, true, err
		}
		sumFile, err := writeChecksum(dst, sum)
		if err != nil {
			return nil, true, true, err
		}
		ui.Message(fmt.Sprintf("%s: %.1f MiB in %s, sha256 %s", filepath.Base(dst), float64(st.Size())/(1<<20), time.Since(start).Round(100*time.Millisecond), sum))
		files = append(files, dst, sumFile)
		outputs = append(outputs, Output{File: filepath.Base(dst), Format: format, Compression: compression, Size: st.Size(), SHA256: sum})
		if format == "qcow2" {
			qcow2 = dst
		}
	}
	now := time.Now
	if p.now != nil {
		now = p.now
	}
	built := now().UTC().Truncate(time.Second)
	qemuImg := qemuImgVersion(c.QemuImgPath)
	// The SBOM and the provenance describe every output; a containerdisk
	// carries them as referrers of its image, so they are written when its
	// image's name and digest are known, before its archive.
	docsOf := imageDocs{name: name, created: built, os: osinfo, rec: rec, in: in, c: c,
		configSHA256: p.configSHA256, templatePath: p.templatePath, qemuImg: qemuImg}
	var docs []document
	writeDocs := func(outs []Output) ([]attachment, error) {
		var err error
		if docs, err = docsOf.write(dir, outs); err != nil {
			return nil, err
		}
		var atts []attachment
		for _, d := range docs {
			atts = append(atts, attachment{artifactType: d.MediaType, title: d.File, content: d.content, created: built})
		}
		return atts, nil
	}
	// After the disk formats, whatever the order listed: it reuses the
	// qcow2 output, and upload_pool takes the first output, a disk.
	if slices.Contains(c.Formats, formatContainerDisk) {
		// The default tag names the Kubernetes release kubenode-bake baked.
		kubernetes := ""
		if rec != nil {
			kubernetes = rec.Facts.Kubernetes
		}
		disks := slices.Clone(outputs)
		out, written, err := exportContainerDisk(ctx, ui, c, absSrc, srcFormat, qcow2, dir, name, kubernetes, func(image, digest string) ([]attachment, error) {
			return writeDocs(append(disks, Output{Format: formatContainerDisk, Image: image, Digest: digest}))
		})
		if err != nil {
			return nil, true, true, err
		}
		files = append(files, written...)
		outputs = append(outputs, out)
	} else if _, err := writeDocs(outputs); err != nil {
		return nil, true, true, err
	}
	for _, d := range docs {
		files = append(files, d.path)
		ui.Say("Wrote " + d.path)
	}

	m := Manifest{
		SchemaVersion: ManifestSchemaVersion,
		BuildTime:     built,
		OS:            osinfo,
		Firmware:      firmware(in),
		Tools:         Tools{Builder: in.BuilderId(), Plugin: version.PluginVersion.FormattedVersion(), QemuImg: qemuImg},
		Outputs:       outputs,
		SBOM:          &docs[0].Document,
		Provenance:    &docs[1].Document,
	}
	if rec != nil {
		m.Baked = &rec.Facts
	}
	a := &Artifact{dir: dir, manifest: m, source: sourceID(in)}
	if c.UploadPool != "" {
		if err := upload(ctx, ui, c, filepath.Join(dir, outputs[0].File), outputs[0]); err != nil {
			return nil, true, true, err
		}
		a.volume = &uploadedVolume{uri: c.UploadURI, pool: c.UploadPool, name: c.uploadVolumeName(outputs[0])}
	}
	mf, err := writeManifest(dir, m)
	if err != nil {
		return nil, true, true, fmt.Errorf("writing %s: %w", ManifestFile, err)
	}
	ui.Say("Wrote " + mf)
	a.files = append(files, mf)
	if _, err := baked.Take(c.PackerBuildName); err != nil {
		return nil, true, true, err
	}
	return a, true, insideInput(in, dir), nil
}

// sourceID is what HCP Packer records the outputs as made from: what the
// input artifact was made from (the builder's disk_image), never the
// input's own file, which keep_input_artifact = false may delete and
// which would make the build's source change from run to run. "" when
// the input reports no image.
func sourceID(in packersdk.Artifact) string {
	var images []registryimage.Image
	if mapstructure.WeakDecode(in.State(registryimage.ArtifactStateURI), &images) != nil || len(images) == 0 {
		return ""
	}
	return images[0].SourceImageID
}

// insideInput says whether dir is, or is inside, the directory of one of
// the input's files: destroying the input would remove it.
func insideInput(in packersdk.Artifact, dir string) bool {
	out, err := resolvedPath(dir)
	if err != nil {
		return true
	}
	for _, f := range in.Files() {
		d, err := resolvedPath(filepath.Dir(f))
		if err != nil {
			return true
		}
		if rel, err := filepath.Rel(d, out); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// resolvedPath is p absolute with its symlinks resolved, so that a
// directory reached through a link compares equal to its target. A path
// that does not exist yet has its longest existing parent resolved.
func resolvedPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for d := abs; ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if filepath.Dir(d) == d {
			return abs, nil
		}
		rest = append([]string{filepath.Base(d)}, rest...)
	}
}

// diskImage picks the disk image among an artifact's files.
func diskImage(files []string) (string, error) {
	for _, f := range files {
		switch strings.ToLower(filepath.Ext(f)) {
		case ".qcow2", ".raw", ".img":
			return f, nil
		}
	}
	return "", fmt.Errorf("the input artifact has no disk image (.qcow2, .raw or .img) among %v: kubenode-export follows kubenode-libvirt or another builder that writes one", files)
}

// checkOutputDir refuses an output directory every user can write to,
// unless allow is set: another user could replace the outputs there
// between the export and their use. The sticky bit (as on /tmp) does not
// help: it keeps others from removing files, not from creating the names
// the export writes next.
func checkOutputDir(dir string, allow bool) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("output_directory: %w", err)
	}
	if st.Mode().Perm()&0o002 != 0 && !allow {
		return fmt.Errorf("output_directory %s is writable by every user (%s): another user could plant or replace files among the outputs; "+
			"write them into a directory only you (and your group) can write to, or set allow_shared_output_directory = true", dir, st.Mode())
	}
	return nil
}

func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".kubenode-write-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// osInfo is what the builder knows of the OS.
func osInfo(in packersdk.Artifact) OSInfo {
	f, _ := libvirt.ReadImageFacts(in.State)
	info := OSInfo{Family: f.OSFamily, Version: f.OSVersion, Edition: f.OSEdition, SeedFlavor: f.SeedFlavor}
	if info.Family == "" {
		info.Family = "unknown"
	}
	return info
}

// reported adds what the guest told kubenode-bake; the guest's word wins.
func (o OSInfo) reported(g baked.GuestOS) OSInfo {
	o.ID, o.Name, o.Build = g.ID, g.Name, g.Build
	if g.Version != "" {
		o.Version = g.Version
	}
	if o.Family == "unknown" {
		switch g.ID {
		case "":
		case "windows":
			o.Family = "windows"
		default:
			o.Family = "linux"
		}
	}
	return o
}

func firmware(in packersdk.Artifact) Firmware {
	f, _ := libvirt.ReadImageFacts(in.State)
	fw := Firmware{Type: f.Firmware}
	if fw.Type == "" {
		fw.Type = "unknown"
	}
	for _, f := range in.Files() {
		switch filepath.Base(f) {
		case "efivars.fd":
			fw.EFIVars = "efivars.fd"
		case "tpm":
			fw.TPMState = "tpm"
		}
	}
	return fw
}

func qemuImgVersion(qemuImg string) string {
	out, err := exec.Command(qemuImg, "--version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}
