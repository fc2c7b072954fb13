// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// sysprep creates the first-boot files' folders, uploads the files
// (FirstBootFiles), then the sysprep
// step's script, and runs it. Exit 0: sysprep has
// generalized Windows and the closer, started outside the WinRM shell,
// closes WinRM and powers Windows off. A dropped connection is taken as
// that power-off too. Any other exit is sysprep's failure, with the tail
// of its logs.
func (r *guest) sysprep(ctx context.Context, p Plan, script []byte) error {
	if p.Generalize {
		if _, err := r.Run(ctx, stepSysprep, powershellQuery(queryFirstBootPrepare, firstBootPrepare(p))); err != nil {
			return fmt.Errorf("%w\nthe first-boot files were not uploaded: their folders could not be made, or %s could not be set aside", err, setupComplete)
		}
	}
	for _, f := range FirstBootFiles(p) {
		if err := r.Comm.Upload(remote.UploadPath(f.Path), bytes.NewReader(f.Content), nil); err != nil {
			err = fmt.Errorf("step sysprep: uploading %s: %w", f.Path, err)
			r.UI.Error(err.Error())
			return err
		}
	}
	if err := r.Comm.Upload(remote.UploadPath(sysprepScript), strings.NewReader(string(script)), nil); err != nil {
		err = fmt.Errorf("step sysprep: uploading its script to %s: %w", sysprepScript, err)
		r.UI.Error(err.Error())
		return err
	}
	command := powershellFile(sysprepScript)
	tail := remote.NewLineTail()
	cmd := &packersdk.RemoteCmd{Command: command, Stdout: tail, Stderr: tail}
	if err := cmd.RunWithUi(ctx, r.Comm, r.UI); err != nil {
		err = fmt.Errorf("step %s: starting `%s`: %w", stepSysprep, command, err)
		r.UI.Error(err.Error())
		return err
	}
	switch code := cmd.ExitStatus(); code {
	case 0:
		r.UI.Say("kubenode-bake [sysprep]: Windows closes WinRM and powers itself off")
		return nil
	case packersdk.CmdDisconnect:
		// Not an error: the guest went down under the command.
		r.UI.Say("kubenode-bake [sysprep]: the connection closed: Windows is powering off")
		return nil
	default:
		err := &remote.StepError{Step: stepSysprep, Command: command, ExitCode: code, Tail: tail.String()}
		r.UI.Error(err.Error())
		return fmt.Errorf("%w\nsysprep did not generalize Windows; its logs are in %s on the build VM (packer build -on-error=abort keeps it)", err, sysprepLogs)
	}
}
