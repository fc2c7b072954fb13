// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package confighash digests a component's configuration as Packer hands
// it to the plugin, for an image's provenance: Packer tells a plugin
// neither its template nor the template's hash, so the configuration each
// component was given stands for it. Two builds with the same digests had
// the same configuration, secrets aside.
package confighash

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Sum is the sha256 (hex) of raws, the maps Packer passes to a
// component's Prepare, as JSON with sorted keys, without the keys Packer
// adds to every component (packer_*, which change from run to run) and
// without secrets: the values of keys named like a secret (password,
// token, ...) and of Packer's sensitive variables are replaced, so that
// the digest cannot be used to guess them.
func Sum(raws ...interface{}) string {
	var sensitive []string
	for _, raw := range raws {
		if m, ok := normalize(raw).(map[string]interface{}); ok {
			if list, ok := m["packer_sensitive_variables"].([]interface{}); ok {
				for _, v := range list {
					if s, ok := v.(string); ok && s != "" {
						sensitive = append(sensitive, s)
					}
				}
			}
		}
	}
	var out []interface{}
	for _, raw := range raws {
		v := redact(normalize(raw), sensitive, true)
		if m, ok := v.(map[string]interface{}); ok && len(m) == 0 {
			continue // Packer's own map, now empty
		}
		out = append(out, v)
	}
	b, err := json.Marshal(out)
	if err != nil {
		// normalize leaves only JSON's types.
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// secretWords name a key whose value is a secret.
var secretWords = []string{"password", "passphrase", "secret", "token", "credential", "private_key"}

// Redacted replaces a secret.
const Redacted = "<redacted>"

func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// redact drops Packer's keys from the top level and replaces secrets.
func redact(v interface{}, sensitive []string, top bool) interface{} {
	switch v := v.(type) {
	case map[string]interface{}:
		out := map[string]interface{}{}
		for k, e := range v {
			switch {
			case top && strings.HasPrefix(k, "packer_"):
			case secretKey(k):
				out[k] = Redacted
			default:
				out[k] = redact(e, sensitive, false)
			}
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(v))
		for i, e := range v {
			out[i] = redact(e, sensitive, false)
		}
		return out
	case string:
		for _, s := range sensitive {
			v = strings.ReplaceAll(v, s, Redacted)
		}
		return v
	}
	return v
}

// normalize turns what Packer's RPC delivers (maps with interface keys,
// typed slices, strings as []uint8) into JSON's types.
func normalize(v interface{}) interface{} {
	switch v := v.(type) {
	case nil, bool, string, float64, float32, int, int8, int16, int32, int64, uint, uint16, uint32, uint64:
		return v
	case []byte:
		return string(v)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		out := map[string]interface{}{}
		iter := rv.MapRange()
		for iter.Next() {
			k := iter.Key().Interface()
			if b, ok := k.([]byte); ok {
				k = string(b)
			}
			out[fmt.Sprint(k)] = normalize(iter.Value().Interface())
		}
		return out
	case reflect.Slice, reflect.Array:
		out := make([]interface{}, rv.Len())
		for i := range out {
			out[i] = normalize(rv.Index(i).Interface())
		}
		return out
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return normalize(rv.Elem().Interface())
	case reflect.String:
		return rv.String()
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint()
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	}
	return fmt.Sprint(v)
}
