// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmscheme "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme"
	kubeadmv1beta3 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta3"
	kubeadmv1beta4 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"sigs.k8s.io/yaml"
)

// KubeadmAPI is a kubeadm configuration API the joiner writes its
// JoinConfiguration in, and what it cannot say.
//
// Where a field lives in each version (v1beta4's timeouts.discovery is
// v1beta3's discovery.timeout, v1beta4's kubeletExtraArgs list of
// name/value pairs is v1beta3's map) is left to kubeadm's own conversions,
// the ones `kubeadm config migrate` runs; the columns below are what a
// version cannot express, which the joiner refuses or reports rather than
// drop silently.
//
// Sources: k8s.io/kubernetes cmd/kubeadm/app/util/config/common.go
// validateSupportedVersion and joinconfiguration.go
// LoadJoinConfigurationFromFile, which `kubeadm join --config` calls with
// allowDeprecated and allowExperimental false. In v1.30.14 v1beta4 is
// experimental ("experimental API spec ... is not allowed") and v1beta3
// the current API; from v1.31 v1beta4 is the current API and v1beta3 is
// deprecated but still read, with a warning (read at v1.33.13, v1.35.4
// and v1.36.0). The v1beta3 types at v1.30.14 and at v1.33.13, which this
// module builds with, are the same. v1beta3 is kubeadm's API from v1.22.
type KubeadmAPI struct {
	GroupVersion schema.GroupVersion
	// Since is the first kubeadm minor whose `kubeadm join --config` reads
	// it; the newest API a kubeadm reads is the one written.
	Since string
	// KubeletArgsMap: nodeRegistration.kubeletExtraArgs is a map, so each
	// kubelet flag can be given once only.
	KubeletArgsMap bool
	// FixedTLSBootstrap is how long kubeadm waits for the kubelet's TLS
	// bootstrap when the API cannot set it (v1beta3 has no timeouts
	// section; kubeadm's constants.TLSBootstrapTimeout); zero where
	// timeouts.tlsBootstrap is written.
	FixedTLSBootstrap time.Duration
}

// KubeadmAPIs are the APIs the joiner writes, newest first.
var KubeadmAPIs = []KubeadmAPI{
	{GroupVersion: kubeadmv1beta4.SchemeGroupVersion, Since: "v1.31"},
	{GroupVersion: kubeadmv1beta3.SchemeGroupVersion, Since: "v1.22", KubeletArgsMap: true, FixedTLSBootstrap: 5 * time.Minute},
}

// KubeadmAPIFor is the newest API that kubeadm v reads.
func KubeadmAPIFor(v *utilversion.Version) (KubeadmAPI, error) {
	for _, api := range KubeadmAPIs {
		if v.AtLeast(utilversion.MustParseGeneric(api.Since)) {
			return api, nil
		}
	}
	oldest := KubeadmAPIs[len(KubeadmAPIs)-1]
	return KubeadmAPI{}, fmt.Errorf("kubeadm v%s reads no JoinConfiguration the joiner writes (%s is read from kubeadm %s); "+
		"bake the node with a newer kubernetes_version", v, oldest.GroupVersion, oldest.Since)
}

// VersionTimeout bounds `kubeadm version` and `kubelet --version`, which
// answer at once from the binary: one that hangs is not the program.
var VersionTimeout = 30 * time.Second

// KubeadmVersion asks the kubeadm at path (a name looked up on env's PATH,
// or a path) for its version: `kubeadm version -o short`.
func KubeadmVersion(ctx context.Context, h Host, env []string, path string) (*utilversion.Version, error) {
	out, err := versionOutput(ctx, h, env, path, "version", "-o", "short")
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("kubeadm: %w; kubeadmPath must name kubeadm", err)
	case err != nil:
		return nil, fmt.Errorf("kubeadm: %w (kubenode-bake installs it; kubeadmPath says where it is)", err)
	}
	v, err := utilversion.ParseGeneric(out)
	if err != nil {
		return nil, fmt.Errorf("kubeadm: `%s version -o short` printed %q, not a version vX.Y.Z: %w; kubeadmPath must name kubeadm",
			path, truncate(out, 200), err)
	}
	return v, nil
}

// versionOutput runs a version command within VersionTimeout.
func versionOutput(ctx context.Context, h Host, env []string, path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, VersionTimeout)
	defer cancel()
	out, err := h.Output(ctx, env, path, args...)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "", fmt.Errorf("`%s %s` did not answer within %s: %w", path, strings.Join(args, " "), VersionTimeout, context.DeadlineExceeded)
	}
	return out, err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// RenderKubeadmJoinConfiguration is kubeadm's JoinConfiguration for cfg in
// api, as YAML: token discovery with the CA pinned, labels through the
// kubelet's --node-labels, taints through nodeRegistration. It is built
// once, in kubeadm's internal type, and converted to api by kubeadm's
// scheme.
func RenderKubeadmJoinConfiguration(cfg *config.Config, api KubeadmAPI) ([]byte, error) {
	var args []kubeadmapi.Arg
	for _, a := range cfg.KubeletExtraArgs {
		args = append(args, kubeadmapi.Arg{Name: a.Name, Value: a.Value})
	}
	if labels := config.LabelList(cfg.Labels); labels != "" {
		args = append(args, kubeadmapi.Arg{Name: "node-labels", Value: labels})
	}
	if api.KubeletArgsMap {
		seen := map[string]bool{}
		for _, a := range args {
			if seen[a.Name] {
				return nil, fmt.Errorf("kubeletExtraArgs: --%s is given more than once, which a %s JoinConfiguration cannot say "+
					"(kubeletExtraArgs is a map before %s): give it once, or bake the node with kubeadm %s or later",
					a.Name, api.GroupVersion, KubeadmAPIs[0].GroupVersion, KubeadmAPIs[0].Since)
			}
			seen[a.Name] = true
		}
	}
	taints := cfg.Taints
	if taints == nil {
		taints = []corev1.Taint{} // nil would mean kubeadm's defaults
	}
	internal := &kubeadmapi.JoinConfiguration{
		NodeRegistration: kubeadmapi.NodeRegistrationOptions{
			Name:                  cfg.NodeName,
			CRISocket:             cfg.CRISocket,
			Taints:                taints,
			KubeletExtraArgs:      args,
			IgnorePreflightErrors: cfg.IgnorePreflightErrors,
		},
		Discovery: kubeadmapi.Discovery{
			BootstrapToken: &kubeadmapi.BootstrapTokenDiscovery{
				Token:                    cfg.Token,
				APIServerEndpoint:        cfg.APIServerEndpoint,
				CACertHashes:             cfg.CACertHashes,
				UnsafeSkipCAVerification: cfg.UnsafeSkipCAVerification,
			},
			TLSBootstrapToken: cfg.Token,
			// kubeadm's internal type holds the discovery timeout twice, and
			// its decoders set both; the v1beta3 conversion reads this one.
			Timeout: cfg.Timeouts.Discovery,
		},
		Timeouts: &kubeadmapi.Timeouts{
			Discovery:    cfg.Timeouts.Discovery,
			TLSBootstrap: cfg.Timeouts.TLSBootstrap,
		},
	}
	gvk := api.GroupVersion.WithKind("JoinConfiguration")
	out, err := kubeadmscheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := kubeadmscheme.Scheme.Convert(internal, out, nil); err != nil {
		return nil, fmt.Errorf("converting the JoinConfiguration to %s: %w", api.GroupVersion, err)
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return yaml.Marshal(out)
}

// tlsBootstrapNote says when api leaves timeouts.tlsBootstrap unused, or "".
func tlsBootstrapNote(cfg *config.Config, api KubeadmAPI, kubeadm *utilversion.Version) string {
	set := cfg.Timeouts.TLSBootstrap
	if api.FixedTLSBootstrap == 0 || set == nil || set.Duration == api.FixedTLSBootstrap {
		return ""
	}
	return fmt.Sprintf("kubeadm v%s waits a fixed %s for the kubelet's TLS bootstrap (a %s JoinConfiguration cannot set it): timeouts.tlsBootstrap %s is not used",
		kubeadm, api.FixedTLSBootstrap, api.GroupVersion, set.Duration)
}
