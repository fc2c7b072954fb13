// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// execHost runs programs; the OS-specific parts are in host_*.go.
type execHost struct{}

func (execHost) Output(ctx context.Context, env []string, path string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, lookPath(env, path), args...)
	cmd.Env = env
	// When ctx ends, a child the program left holding stdout must not keep
	// Output waiting.
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("`%s %s`: %w", path, strings.Join(args, " "), err)
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

func (execHost) Run(ctx context.Context, env []string, w io.Writer, path string, args ...string) error {
	cmd := exec.CommandContext(ctx, lookPath(env, path), args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = w, w
	return cmd.Run()
}

// lookPath resolves a bare program name on the PATH of env (the one the
// program will run with), so a test's PATH is honoured.
func lookPath(env []string, name string) string {
	if env == nil || strings.ContainsAny(name, `/\`) {
		return name
	}
	for _, kv := range env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			if p, err := lookPathIn(path, name); err == nil {
				return p
			}
		}
	}
	return name
}
