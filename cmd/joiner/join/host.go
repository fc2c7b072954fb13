package join

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// execHost runs programs; the OS-specific parts are in host_*.go.
type execHost struct{}

func (execHost) Output(ctx context.Context, env []string, path string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, lookPath(env, path), args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("`%s %s`: %w: %s", path, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
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
