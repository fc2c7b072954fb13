// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/deliver"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// transfer puts the artifacts in staging (Staging but in tests) and
// has the guest check each one's sha256 before anything is installed:
// downloaded by the guest from srv, or uploaded through the communicator
// when srv is nil, or, with srv.Fallback, when the guest could not
// download them (a file that arrived but differs never falls back). It
// closes srv once the guest has them.
func transfer(ctx context.Context, ui packersdk.Ui, r *remote.Remote, staging string, arts []versions.Artifact, srv *deliver.Server) error {
	size := deliver.Size(arts)
	upload := arts
	if srv != nil {
		defer srv.Close()
		ui.Say(fmt.Sprintf("kubenode-bake [fetch-artifacts]: the guest downloads %d artifacts (%.1f MiB) over HTTP from %s", len(arts), float64(size)/(1<<20), srv.Origin()))
		began := time.Now()
		out, err := runTransferScript(ctx, r, staging, "fetch-artifacts", TransferScript(staging, arts, srv.URL, srv.Origin()))
		if err == nil {
			ui.Say(fmt.Sprintf("kubenode-bake: artifacts on the guest over HTTP: %d files, %s", len(arts), deliver.Rate(size, time.Since(began))))
			return nil
		}
		failed := node.LinesWith(out, "download failed: ")
		if !srv.Fallback || len(failed) == 0 || len(node.LinesWith(out, "mismatch: ", "missing: ")) > 0 {
			return err
		}
		_ = srv.Close()
		upload = nil
		for _, a := range arts {
			if len(node.LinesWith(out, "download failed: artifact "+a.Name+" from ")) > 0 {
				upload = append(upload, a)
			}
		}
		ui.Error(fmt.Sprintf("kubenode-bake: warning: the guest could not download %d artifacts from %s (%s); they are uploaded through the communicator instead. "+
			"Let the guest reach this machine's port (artifact_http_port names one), or set artifact_delivery = \"communicator\" to skip the attempt",
			len(upload), srv.Origin(), failed[0]))
	}
	ui.Say(fmt.Sprintf("kubenode-bake: uploading %d artifacts (%.1f MiB) through the communicator", len(upload), float64(deliver.Size(upload))/(1<<20)))
	began := time.Now()
	for _, a := range upload {
		dest := path.Join(staging, a.FileName)
		ui.Message(fmt.Sprintf("%s: %s -> %s", a.Name, a.Local, dest))
		if err := r.Upload(a.Local, dest); err != nil {
			return fmt.Errorf("uploading artifact %s: %w", a.Name, err)
		}
	}
	if _, err := runTransferScript(ctx, r, staging, "verify-artifacts", TransferScript(staging, arts, nil, "")); err != nil {
		return err
	}
	ui.Say(fmt.Sprintf("kubenode-bake: artifacts on the guest over the communicator: %d files, %s", len(upload), deliver.Rate(deliver.Size(upload), time.Since(began))))
	return nil
}

// runTransferScript uploads and runs a TransferScript as step name; a
// failed check or download is an error listing every artifact named.
func runTransferScript(ctx context.Context, r *remote.Remote, staging, name string, script []byte) (string, error) {
	file := path.Join(staging, "00-"+name+".sh")
	if err := r.Comm.Upload(file, strings.NewReader(string(script)), nil); err != nil {
		return "", fmt.Errorf("step %s: uploading its script: %w", name, err)
	}
	out, err := r.Run(ctx, name, "sh "+q(file))
	var se *remote.StepError
	if errors.As(err, &se) {
		return out, fmt.Errorf("the artifacts on the guest are not the ones checked on this machine, so nothing was installed:\n  %s",
			strings.Join(node.LinesWith(out, "mismatch: ", "missing: ", "download failed: "), "\n  "))
	}
	return out, err
}

// TransferScript is the guest's script that checks each artifact in staging
// against its sha256, naming every one that is missing or differs, and
// exits 1 if any does. With url, it first downloads each one (curl, else
// wget, else python3; never through a proxy: the server is the build
// machine) from url(a); origin, the server without its secret
// path, is what a failed download names.
func TransferScript(staging string, arts []versions.Artifact, url func(versions.Artifact) string, origin string) []byte {
	in := transferInput{Staging: staging, Fetch: url != nil}
	for _, a := range arts {
		t := transferArtifact{Name: a.Name, FileName: a.FileName, SHA256: strings.ToLower(a.SHA256)}
		if url != nil {
			t.URL, t.Shown = url(a), origin+"/.../"+a.FileName
		}
		in.Artifacts = append(in.Artifacts, t)
	}
	return render("transfer.sh.tmpl", in)
}

// transferInput is the input of transfer.sh.tmpl.
type transferInput struct {
	Staging   string
	Fetch     bool
	Artifacts []transferArtifact
}

// transferArtifact is one artifact to check: Name, its FileName in
// staging and its SHA256 (lowercase hex); with Fetch, downloaded from URL,
// which a failure names as Shown (the server without its secret path).
type transferArtifact struct {
	Name, FileName, SHA256 string
	URL, Shown             string
}
