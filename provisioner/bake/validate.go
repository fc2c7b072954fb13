package bake

import (
	"fmt"

	joinerconfig "github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
)

// validateNode checks, for Linux and Windows guests alike, what the image
// hands to the node at first boot: the joiner refuses a configuration with
// a label or kubelet flag it checks at boot (the same rules, from
// internal/joinerapi/config), and a control character in the pause image
// or a proxy would break the files and scripts that carry them. Every
// clone of an image built with such a value would fail, so it fails here,
// naming its HCL key.
func (c *Config) validateNode() []error {
	var errs []error
	for _, k := range sortedKeys(c.NodeLabels) {
		for _, msg := range joinerconfig.CheckLabel(k, c.NodeLabels[k]) {
			errs = append(errs, fmt.Errorf("node_labels[%q]: %s", k, msg))
		}
	}
	for _, name := range sortedKeys(c.KubeletExtraArgs) {
		for _, msg := range []string{joinerconfig.CheckKubeletArgName(name), joinerconfig.ForbiddenKubeletArg(name),
			joinerconfig.CheckKubeletArgValue(name, c.KubeletExtraArgs[name])} {
			if msg != "" {
				errs = append(errs, fmt.Errorf("kubelet_extra_args[%q]: %s", name, msg))
			}
		}
	}
	for _, kv := range [][2]string{{"pause_image", c.PauseImage}, {"http_proxy", c.HTTPProxy}, {"https_proxy", c.HTTPSProxy}, {"no_proxy", c.NoProxy}} {
		if why := oneLine(kv[1]); why != "" {
			errs = append(errs, fmt.Errorf("%s: %s", kv[0], why))
		}
	}
	return errs
}
