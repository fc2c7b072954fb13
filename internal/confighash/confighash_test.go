// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package confighash

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSumIsTheConfigurationWithoutPackersKeysAndSecrets(t *testing.T) {
	config := map[string]interface{}{
		"kubernetes_version": "v1.33.1",
		"images":             []interface{}{map[string]interface{}{"path": "pause.tar"}},
		"ssh_password":       "hunter2",
		"registry_auth":      map[string]interface{}{"token": "abc"},
		"http_proxy":         "http://user:s3cret-value@proxy:3128",
	}
	packer := map[string]interface{}{"packer_build_name": "debian", "packer_core_version": "1.16.0",
		"packer_sensitive_variables": []interface{}{"s3cret-value"}}
	base := Sum(config, packer)
	assert.Regexp(t, `^[0-9a-f]{64}$`, base)

	// Packer's keys change from run to run: they are not the configuration.
	other := map[string]interface{}{"packer_build_name": "debian", "packer_core_version": "1.9.4", "packer_run": "x",
		"packer_sensitive_variables": []interface{}{"s3cret-value"}}
	assert.Equal(t, base, Sum(config, other))
	// Strings arrive as []uint8 over Packer's RPC: the same configuration.
	bytes := map[string]interface{}{}
	for k, v := range config {
		bytes[k] = v
	}
	bytes["kubernetes_version"] = []uint8("v1.33.1")
	assert.Equal(t, base, Sum(bytes, packer))

	// Secrets do not change the digest, so it tells nothing about them.
	for key, value := range map[string]interface{}{
		"ssh_password":  "another",
		"registry_auth": map[string]interface{}{"token": "xyz"},
	} {
		changed := map[string]interface{}{}
		for k, v := range config {
			changed[k] = v
		}
		changed[key] = value
		assert.Equal(t, base, Sum(changed, packer), key)
	}
	changed := map[string]interface{}{}
	for k, v := range config {
		changed[k] = v
	}
	changed["http_proxy"] = "http://user:another@proxy:3128"
	assert.Equal(t, base, Sum(changed, map[string]interface{}{"packer_sensitive_variables": []interface{}{"another"}}),
		"a sensitive variable's value is replaced wherever it appears")

	// Anything else is the configuration.
	changed["kubernetes_version"] = "v1.33.2"
	assert.NotEqual(t, base, Sum(changed, packer))
	changed = map[string]interface{}{}
	for k, v := range config {
		changed[k] = v
	}
	changed["images"] = []interface{}{map[string]interface{}{"path": "other.tar"}}
	assert.NotEqual(t, base, Sum(changed, packer))
}
