// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/ctxio"
	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
	"github.com/kubenode/packer-plugin-kubenode/internal/ocilayout"
	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
)

// The containerDisk's layer, as KubeVirt reads it: virt-launcher runs QEMU
// as 107:107 and looks for the image under /disk. The modes are those of
// KubeVirt's own container disks (containerimages/BUILD.bazel: the file
// 0440, owner 107.107; kubevirt/containerdisks: `disk/` 0555): the disk
// holds the build account's secrets, so it is not world-readable.
const (
	containerDiskUID      = 107
	containerDiskDir      = "disk/"
	containerDiskDirMode  = 0o555
	containerDiskFileMode = 0o440
	// containerDiskSuffix ends the archive's file name.
	containerDiskSuffix = ".containerdisk.tar"
	// digestTagLength is how many hex digits of the image's digest the
	// default tag holds.
	digestTagLength = 12
)

// epoch dates every entry of the layer and the archive, and the image's
// creation: the same disk gives the same digests.
var epoch = ocilayout.Epoch

// tagRE is the OCI distribution spec's tag.
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// prepareContainerDisk sets the containerdisk keys' defaults and checks
// them; enabled says whether formats lists containerdisk.
func (c *Config) prepareContainerDisk(enabled bool, add func(key, format string, args ...any)) {
	if c.ContainerDiskInsecure {
		add("containerdisk_insecure", "is no longer supported: it allowed plain HTTP and unverified TLS at once, with the docker config's credentials; "+
			"list a registry without TLS in containerdisk_plain_http_hosts (pushed to without credentials; a loopback registry needs no listing), "+
			"or give the CA of a registry's private certificate in containerdisk_ca_file")
	}
	if !enabled {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"containerdisk_repository", c.ContainerDiskRepository != ""},
			{"containerdisk_tag", c.ContainerDiskTag != ""},
			{"containerdisk_plain_http_hosts", len(c.ContainerDiskPlainHTTPHosts) > 0},
			{"containerdisk_ca_file", c.ContainerDiskCAFile != ""},
		} {
			if k.set {
				add(k.key, "is set, but formats does not list \"containerdisk\": add it to formats, or remove %s", k.key)
			}
		}
		return
	}
	// Unset, the tag is the image's own (defaultContainerDiskTag), known
	// once the image is.
	if c.ContainerDiskTag != "" && !tagRE.MatchString(c.ContainerDiskTag) {
		add("containerdisk_tag", "%q is not a tag: use up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-', e.g. \"v1.33.13\"", c.ContainerDiskTag)
	}
	if c.ContainerDiskRepository != "" {
		if _, err := name.NewRepository(c.ContainerDiskRepository); err != nil {
			add("containerdisk_repository", "%q is not a repository (%v): use registry/path in lowercase without a tag or digest, e.g. \"registry.example.com/nodes/debian-12\"; the tag is containerdisk_tag", c.ContainerDiskRepository, err)
		}
	}
	c.prepareRegistryAccess(add)
}

// diskFormats are the formats qemu-img writes, in the order listed.
func (c *Config) diskFormats() []string {
	var out []string
	for _, f := range c.Formats {
		if _, ok := formatExt[f]; ok {
			out = append(out, f)
		}
	}
	return out
}

// containerDiskRef is the name the archive gives the image:
// containerdisk_repository, or localhost/kubenode/<output name>, tagged
// containerdisk_tag, by default defaultContainerDiskTag(kubernetes,
// digest).
func (c *Config) containerDiskRef(outputName, kubernetes string, digest v1.Hash) (name.Tag, error) {
	repo := c.ContainerDiskRepository
	if repo == "" {
		repo = "localhost/kubenode/" + repositoryComponent(outputName)
	}
	tag := c.ContainerDiskTag
	if tag == "" {
		tag = defaultContainerDiskTag(kubernetes, digest)
	}
	return name.NewTag(repo + ":" + tag)
}

// defaultContainerDiskTag is containerdisk_tag's default, a tag that
// names one image only, as Cluster API's immutable machine templates
// expect: the Kubernetes release kubenode-bake baked (kubernetes; empty
// when the image was not baked) and the first hex digits of the image's
// digest, "v1.37.2-3f2a9c01be47"; the digest's alone without a release.
// Never "latest".
func defaultContainerDiskTag(kubernetes string, digest v1.Hash) string {
	hex := digest.Hex
	if len(hex) > digestTagLength {
		hex = hex[:digestTagLength]
	}
	if tag := kubernetes + "-" + hex; kubernetes != "" && tagRE.MatchString(tag) {
		return tag
	}
	return hex
}

// repositoryComponent turns an output name into a valid repository path
// component: lowercase, other characters replaced by '-'.
func repositoryComponent(s string) string {
	b := []byte(strings.ToLower(s))
	for i, ch := range b {
		if (ch < 'a' || ch > 'z') && (ch < '0' || ch > '9') && ch != '.' && ch != '_' && ch != '-' {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), ".-_")
	if out == "" {
		return "image"
	}
	return out
}

// writeDiskLayer writes the containerDisk layer of the qcow2 at disk to w,
// streaming: a gzip tar of `disk/` and `disk/<fileName>`, both owned by
// 107:107 and dated epoch, nothing else. It returns the layer's diffID
// (the sha256 of the tar). progress gets each 10% of the disk read.
func writeDiskLayer(ctx context.Context, w io.Writer, disk, fileName string, progress func(pct int)) (v1.Hash, error) {
	f, err := os.Open(disk)
	if err != nil {
		return v1.Hash{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return v1.Hash{}, err
	}
	// BestSpeed, as go-containerregistry's own layers: the qcow2's
	// clusters are already compressed.
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return v1.Hash{}, err
	}
	diffID := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(diffID, gz))
	for _, h := range []*tar.Header{
		{Typeflag: tar.TypeDir, Name: containerDiskDir, Mode: containerDiskDirMode},
		{Typeflag: tar.TypeReg, Name: containerDiskDir + fileName, Mode: containerDiskFileMode, Size: st.Size()},
	} {
		h.Uid, h.Gid, h.ModTime = containerDiskUID, containerDiskUID, epoch
		if err := tw.WriteHeader(h); err != nil {
			return v1.Hash{}, err
		}
	}
	r := &progressReader{r: ctxio.Reader{Ctx: ctx, R: f}, total: st.Size(), report: progress, last: -1}
	if _, err := io.Copy(tw, r); err != nil {
		return v1.Hash{}, fmt.Errorf("reading %s into the layer: %w", disk, err)
	}
	if err := tw.Close(); err != nil {
		return v1.Hash{}, fmt.Errorf("%s changed while it was read: %w", disk, err)
	}
	if err := gz.Close(); err != nil {
		return v1.Hash{}, err
	}
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(diffID.Sum(nil))}, nil
}

// progressReader reports each 10% of total read.
type progressReader struct {
	r      io.Reader
	total  int64
	done   int64
	report func(pct int)
	last   int
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += int64(n)
	if p.report != nil && p.total > 0 {
		if step := int(p.done*100/p.total) / 10 * 10; step > p.last {
			p.last = step
			p.report(step)
		}
	}
	return n, err
}

// fileLayer is a gzip layer written to a file, with the digests computed
// while it was written: go-containerregistry needs not read it again.
type fileLayer struct {
	path           string
	digest, diffID v1.Hash
	size           int64
}

func (l *fileLayer) Digest() (v1.Hash, error)             { return l.digest, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)             { return l.diffID, nil }
func (l *fileLayer) Size() (int64, error)                 { return l.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error)  { return types.OCILayer, nil }
func (l *fileLayer) Compressed() (io.ReadCloser, error)   { return os.Open(l.path) }
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) { return gunzipFile(l.path) }

func gunzipFile(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{gz, f}, nil
}

// countingHash is a sha256 that counts what it is written.
type countingHash struct {
	hash.Hash
	n int64
}

func (c *countingHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.Hash.Write(p)
}

// writeLayerFile writes the disk's layer into dst (0600), returning it as
// a layer.
func writeLayerFile(ctx context.Context, disk, fileName, dst string, progress func(pct int)) (*fileLayer, error) {
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sum := &countingHash{Hash: sha256.New()}
	diffID, err := writeDiskLayer(ctx, io.MultiWriter(f, sum), disk, fileName, progress)
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return &fileLayer{path: dst, digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum.Sum(nil))}, diffID: diffID, size: sum.n}, nil
}

// containerDiskImage is the linux/amd64 OCI image of the one layer, its
// config and manifest fixed (created epoch, no history dates), so that
// its digest depends on the layer alone.
func containerDiskImage(layer v1.Layer) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Created = v1.Time{Time: epoch}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(img, types.OCIConfigJSON), nil
}

// attachment is a document the containerDisk carries as an OCI referrer
// of its image: an artifact of artifactType holding the file title.
type attachment struct {
	artifactType, title string
	content             []byte
	created             time.Time
}

// attachFunc returns what the containerDisk image (its name and manifest
// digest) carries as referrers.
type attachFunc func(image, digest string) ([]attachment, error)

// writeContainerDisk packs the qcow2 at disk as a KubeVirt containerDisk
// into archive, an OCI image layout in a tar whose index names the image
// (the annotations `ctr images import` names it by) as ref(its digest),
// which it returns with the image, and lists what attach returns as the
// image's referrers: artifact manifests whose subject is the image's
// manifest, unnamed. The layout is assembled in work, a scratch directory
// beside archive; the returned images read their blobs from there, so
// they are valid until work is removed. The archive is written into work
// and moved to archive when complete, with mode (safefile.Place).
func writeContainerDisk(ctx context.Context, disk, fileName string, ref func(v1.Hash) (name.Tag, error), archive, work string, mode os.FileMode, attach attachFunc, progress func(pct int)) (v1.Image, name.Tag, []v1.Image, error) {
	dir := filepath.Join(work, "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, name.Tag{}, nil, err
	}
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return nil, name.Tag{}, nil, err
	}
	// The layer is written where the layout keeps it, so that AppendImage,
	// which skips a blob that is there, does not copy it.
	layer, err := writeLayerFile(ctx, disk, fileName, filepath.Join(blobs, ".layer.partial"), progress)
	if err != nil {
		return nil, name.Tag{}, nil, err
	}
	final := filepath.Join(blobs, layer.digest.Hex)
	if err := os.Rename(layer.path, final); err != nil {
		return nil, name.Tag{}, nil, err
	}
	layer.path = final
	img, err := containerDiskImage(layer)
	if err != nil {
		return nil, name.Tag{}, nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, name.Tag{}, nil, err
	}
	named, err := ref(digest)
	if err != nil {
		return nil, name.Tag{}, nil, err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          named.String(),
		"org.opencontainers.image.ref.name": named.TagStr(),
	}), layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"})); err != nil {
		return nil, name.Tag{}, nil, fmt.Errorf("writing the OCI layout: %w", err)
	}
	var referrers []v1.Image
	if attach != nil {
		if referrers, err = appendReferrers(p, img, named, attach); err != nil {
			return nil, name.Tag{}, nil, err
		}
	}
	tmp := filepath.Join(work, "archive.tar")
	if err := ocilayout.Tar(ctx, dir, tmp); err != nil {
		os.Remove(tmp)
		return nil, name.Tag{}, nil, err
	}
	if err := safefile.Place(tmp, archive, mode); err != nil {
		os.Remove(tmp)
		return nil, name.Tag{}, nil, err
	}
	return img, named, referrers, nil
}

// appendReferrers appends what attach returns for img, named ref, to the
// layout as referrers of img, and returns them.
func appendReferrers(p layout.Path, img v1.Image, ref name.Tag, attach attachFunc) ([]v1.Image, error) {
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	size, err := img.Size()
	if err != nil {
		return nil, err
	}
	atts, err := attach(ref.String(), digest.String())
	if err != nil {
		return nil, err
	}
	subject := v1.Descriptor{MediaType: mt, Digest: digest, Size: size}
	var out []v1.Image
	for _, a := range atts {
		r, err := ocilayout.Referrer(subject, a.artifactType, a.title, a.content, a.created)
		if err != nil {
			return nil, err
		}
		if err := p.AppendImage(r); err != nil {
			return nil, fmt.Errorf("writing %s into the OCI layout: %w", a.title, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// exportContainerDisk writes <name>.containerdisk.tar into dir from
// qcow2, the qcow2 output of this run, or when there is none from a qcow2
// it converts src into first, with what attach returns as its image's
// referrers; then pushes the image and its referrers when
// containerdisk_repository is set. It returns the manifest's output and
// the files written.
func exportContainerDisk(ctx context.Context, ui packersdk.Ui, c *Config, src, srcFormat, qcow2, dir, outName, kubernetes string, attach attachFunc) (Output, []string, error) {
	ref := func(digest v1.Hash) (name.Tag, error) {
		r, err := c.containerDiskRef(outName, kubernetes, digest)
		if err != nil {
			return name.Tag{}, fmt.Errorf("containerdisk image name from output_name %q: %w", outName, err)
		}
		return r, nil
	}
	// A name that cannot be is refused before the work.
	if _, err := ref(v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}); err != nil {
		return Output{}, nil, err
	}
	work, err := os.MkdirTemp(dir, "."+outName+".containerdisk-*.partial")
	if err != nil {
		return Output{}, nil, err
	}
	defer os.RemoveAll(work)
	start := time.Now()
	if qcow2 == "" {
		qcow2 = filepath.Join(work, outName+".qcow2")
		ui.Say(fmt.Sprintf("Writing the containerdisk's qcow2 (compression %s, %d threads)", c.Compression, c.Threads))
		args := ConvertArgs(src, srcFormat, qcow2, "qcow2", c.Compression, c.Threads)
		if err := convert(ctx, c.QemuImgPath, args, qcow2, 0o600, func(pct int) {
			ui.Message(fmt.Sprintf("containerdisk qcow2: %d%% (%s)", pct, time.Since(start).Round(time.Second)))
		}); err != nil {
			return Output{}, nil, err
		}
	}
	archive := filepath.Join(dir, outName+containerDiskSuffix)
	fileName := outName + ".qcow2"
	ui.Say(fmt.Sprintf("Writing %s (KubeVirt containerDisk holding disk/%s)", archive, fileName))
	img, named, referrers, err := writeContainerDisk(ctx, qcow2, fileName, ref, archive, work, c.fileMode, attach, func(pct int) {
		ui.Message(fmt.Sprintf("%s: %d%% (%s)", filepath.Base(archive), pct, time.Since(start).Round(time.Second)))
	})
	if err != nil {
		if ctx.Err() != nil {
			return Output{}, nil, fmt.Errorf("writing %s interrupted: %w", filepath.Base(archive), ctx.Err())
		}
		return Output{}, nil, fmt.Errorf("writing %s: %w", filepath.Base(archive), err)
	}
	digest, err := img.Digest()
	if err != nil {
		return Output{}, nil, err
	}
	st, err := os.Stat(archive)
	if err != nil {
		return Output{}, nil, err
	}
	sum, err := filehash.SHA256(archive)
	if err != nil {
		return Output{}, nil, err
	}
	sumFile, err := writeChecksum(archive, sum)
	if err != nil {
		return Output{}, nil, err
	}
	ui.Message(fmt.Sprintf("%s: %.1f MiB in %s, sha256 %s, image %s (%s)", filepath.Base(archive), float64(st.Size())/(1<<20), time.Since(start).Round(100*time.Millisecond), sum, named, digest))
	out := Output{File: filepath.Base(archive), Format: formatContainerDisk, Compression: "gzip", Size: st.Size(), SHA256: sum, Image: named.String(), Digest: digest.String()}
	files := []string{archive, sumFile}
	if c.ContainerDiskRepository != "" {
		ui.Say(fmt.Sprintf("Pushing %s", named))
		pushed, err := pushContainerDisk(ctx, ui, c, img, named, referrers)
		if err != nil {
			return Output{}, nil, fmt.Errorf("%w; the archive %s is complete: `ctr images import` or `skopeo copy oci-archive:%s:%s` it, or run the export again", err, archive, archive, named.TagStr())
		}
		ui.Message("pushed " + pushed)
		out.Reference = pushed
	}
	return out, files, nil
}
