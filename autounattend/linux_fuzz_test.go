// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzLinuxCloudInit renders the two YAML flavors from arbitrary host
// names, usernames, passwords and late commands. Whatever Validate accepts
// must render, parse back as YAML and keep every value: the password as a
// hash of the same plaintext, the command as the same string (for
// autoinstall, as the one word curtin hands to sh -c).
func FuzzLinuxCloudInit(f *testing.F) {
	f.Add("node-1", "kubenode", "secret", "echo hi")
	f.Add("node-1.example.com", "_kube-node_1", `p'a"s$s: #w\o🔑rd`, `echo "it's $HOME" > /tmp/x; rm -rf '/'`)
	f.Add("yes", "u", "0755", "12:30")
	f.Add("", "kubenode", "", "- item")
	f.Add("a", "b", "\u2028", "key: value # comment")
	f.Add("0x1f", "on", " ", `'"'"'`)
	const salt = "fuzzsalt"
	f.Fuzz(func(t *testing.T, hostname, username, password, cmd string) {
		for _, flavor := range []string{FlavorCloudInit, FlavorUbuntuAutoinstall} {
			l := Linux{
				Flavor:            flavor,
				Hostname:          hostname,
				Username:          username,
				Password:          password,
				PasswordSalt:      salt,
				SSHAuthorizedKeys: []string{linuxTestKeyEd25519},
				LateCommands:      []string{cmd},
			}
			if password == "" {
				l.PasswordSalt = ""
			}
			files, err := RenderLinux(l)
			if verr := l.Validate(); verr != nil {
				require.True(t, IsValidation(verr), "%v", verr)
				require.True(t, IsValidation(err), "RenderLinux rendered what Validate refused: %v", err)
				continue
			}
			require.NoError(t, err)
			user := linuxYAML(t, linuxFile(t, files, LinuxUserDataFile))
			meta := linuxYAML(t, linuxFile(t, files, LinuxMetaDataFile))
			wantHost := hostname
			if wantHost == "" {
				wantHost = "kubenode"
			}
			assert.Equal(t, wantHost, meta["local-hostname"])

			var hash string
			if flavor == FlavorCloudInit {
				short, _, _ := strings.Cut(wantHost, ".")
				assert.Equal(t, short, user["hostname"])
				u := user["users"].([]any)[0].(map[string]any)
				assert.Equal(t, username, u["name"])
				hash, _ = u["passwd"].(string)
				assert.Equal(t, password == "", u["lock_passwd"])
				assert.Equal(t, []string{cmd}, anyStrings(t, user["runcmd"]))
			} else {
				a := user["autoinstall"].(map[string]any)
				id := a["identity"].(map[string]any)
				assert.Equal(t, wantHost, id["hostname"])
				assert.Equal(t, username, id["username"])
				hash, _ = id["password"].(string)
				if password == "" {
					assert.Equal(t, lockedPassword, hash)
					hash = ""
				}
				late := anyStrings(t, a["late-commands"])
				require.Len(t, late, 2)
				const prefix = "curtin in-target --target=/target -- sh -c "
				require.True(t, strings.HasPrefix(late[1], prefix), late[1])
				assert.Equal(t, cmd, unquoteShellWord(t, strings.TrimPrefix(late[1], prefix)))
			}
			if password == "" {
				assert.Empty(t, hash)
				continue
			}
			// The hash must be the plaintext's under its own salt.
			require.True(t, strings.HasPrefix(hash, "$6$"+salt+"$"), hash)
			again, err := HashPassword(password, salt)
			require.NoError(t, err)
			assert.Equal(t, again, hash)
		}
	})
}

// unquoteShellWord reads one POSIX shell word made of single-quoted,
// double-quoted and bare parts, as sh would, and fails on anything after it.
func unquoteShellWord(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			require.GreaterOrEqual(t, end, 0, "unclosed ' in %s", s)
			b.WriteString(s[i+1 : i+1+end])
			i += 1 + end
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
				}
				require.NotContains(t, "$`", string(s[i]), "unescaped expansion in %s", s)
				b.WriteByte(s[i])
			}
			require.Less(t, i, len(s), "unclosed \" in %s", s)
		case ' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')', '$', '`', '*', '?', '[', '#', '~':
			t.Fatalf("unquoted %q in %s", c, s)
		case '\\':
			i++
			require.Less(t, i, len(s))
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
