// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/seed"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// loadConfig assembles the configuration: --config alone, or the image's
// file, then the join seed disc when the token is still missing; flags last.
func loadConfig(ctx context.Context, d *data) error {
	o := d.opts
	cfg := config.New()
	if o.ConfigFile != "" {
		if err := cfg.MergeFile(o.ConfigFile); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		d.sources = append(d.sources, o.ConfigFile)
	} else {
		switch err := cfg.MergeFile(o.Paths.Config); {
		case err == nil:
			d.sources = append(d.sources, o.Paths.Config)
		case !errors.Is(err, os.ErrNotExist):
			return err
		}
		if cfg.Token == "" && (o.Overrides == nil || o.Overrides.Token == "") && !exists(o.Paths.KubeletConf) {
			timeout := config.DefaultSeedTimeout
			for _, layer := range []*config.Config{cfg, o.Overrides} {
				if layer != nil && layer.Timeouts.Seed != nil {
					timeout = layer.Timeouts.Seed.Duration
				}
			}
			fmt.Fprintf(o.Log, "[config] no token yet: waiting up to %s for the join seed disc (label %s)%s\n", timeout, config.SeedLabel, orSeedFile(o.Paths))
			seed, where, err := seed.Find(ctx, o.Paths, timeout, o.Log)
			if err != nil {
				return err
			}
			source := where + ":" + config.FileName
			if where == o.Paths.SeedFile {
				source = where
			}
			if err := cfg.MergeSeed(source, seed); err != nil {
				return err
			}
			d.sources = append(d.sources, where)
		}
	}
	if o.Overrides != nil {
		flags, err := yaml.Marshal(o.Overrides)
		if err != nil {
			return err
		}
		if err := cfg.Merge("flags", flags); err != nil {
			return err
		}
		d.sources = append(d.sources, "flags")
	}
	host, err := o.Hostname()
	if err != nil {
		return fmt.Errorf("reading the host name: %w", err)
	}
	cfg.SetDefaults(host, config.DefaultCRISocket)
	// A joined node has no token left: check the rest.
	validate := cfg.Validate
	if exists(o.Paths.KubeletConf) {
		validate = cfg.ValidateNode
	}
	if err := validate(); err != nil {
		return fmt.Errorf("the join configuration (from %s) is invalid: %w", strings.Join(d.sources, ", "), err)
	}
	d.cfg = cfg
	fmt.Fprintf(o.Log, "[config] node %s joins %s (configuration from %s)\n", cfg.NodeName, cfg.APIServerEndpoint, strings.Join(d.sources, ", "))
	if cfg.UnsafeSkipCAVerification {
		fmt.Fprintf(o.Log, "[config] WARNING: unsafeSkipCAVerification is set: the cluster CA is NOT pinned, and whoever answers on %s can take this node.\n", cfg.APIServerEndpoint)
	}
	return nil
}

// orSeedFile names the seed file the joiner also looks for, if any.
func orSeedFile(p config.Paths) string {
	if p.SeedFile == "" {
		return ""
	}
	return " or the join seed file " + p.SeedFile
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// checkJoined: kubelet.conf exists and the API server knows this Node.
func checkJoined(ctx context.Context, d *data) error {
	path := d.opts.Paths.KubeletConf
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	client, err := nodeClient(d)
	if err != nil {
		return err
	}
	err = poll(ctx, d, d.cfg.Timeouts.Discovery.Duration, func(ctx context.Context) error {
		_, err := client.CoreV1().Nodes().Get(ctx, d.cfg.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return permanent(err)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%s exists but Node %s could not be confirmed in the cluster: %w; "+
			"if this node was removed or belongs to another cluster, run `kubeadm reset -f` and run the joiner again",
			path, d.cfg.NodeName, err)
	}
	d.joined = true
	return nil
}

// nodeClient is a client with the node's own credentials (kubelet.conf).
func nodeClient(d *data) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", d.opts.Paths.KubeletConf)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", d.opts.Paths.KubeletConf, err)
	}
	rc.Timeout = 15 * time.Second
	return d.opts.NewClient(rc)
}
