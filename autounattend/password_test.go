// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHashPasswordKnownAnswer is the example from the SHA-crypt
// specification (and what `openssl passwd -6 -salt saltstring` prints).
func TestHashPasswordKnownAnswer(t *testing.T) {
	got, err := HashPassword("Hello world!", "saltstring")
	require.NoError(t, err)
	assert.Equal(t, "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1", got)
}

// cryptTestPasswords cover the branches of the scheme: key lengths around
// the 64-byte digest size, multi-byte UTF-8 and shell-special characters.
var cryptTestPasswords = []string{
	"password",
	"x",
	"pässwörd ünïcödé 🔑 密码",
	`'"$\!#;&|<>*?` + "`" + ` $(reboot) ~root`,
	"space at end ",
	strings.Repeat("a", 63),
	strings.Repeat("b", 64),
	strings.Repeat("c", 65),
	strings.Repeat("d", 128),
	strings.Repeat("é", 100),
}

// TestHashPasswordMatchesOpenSSL checks HashPassword against Debian's
// openssl for fixed and random passwords, with salts of every length.
func TestHashPasswordMatchesOpenSSL(t *testing.T) {
	openssl := requireTool(t, "openssl")
	rng := rand.New(rand.NewPCG(1, 2))
	salts := []string{"a", "saltsalt", "./0123456789ABCD", "kubenode", randomTestSalt(rng, 5), randomTestSalt(rng, 16)}
	for _, salt := range salts {
		passwords := append([]string{}, cryptTestPasswords...)
		for i := 0; i < 25; i++ {
			passwords = append(passwords, randomTestPassword(rng))
		}
		// -stdin hashes one password per line: one process per salt.
		cmd := exec.Command(openssl, "passwd", "-6", "-salt", salt, "-stdin")
		cmd.Stdin = strings.NewReader(strings.Join(passwords, "\n") + "\n")
		out, err := cmd.Output()
		require.NoError(t, err)
		want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		require.Len(t, want, len(passwords), "salt %q", salt)
		for i, pw := range passwords {
			got, err := HashPassword(pw, salt)
			require.NoError(t, err)
			assert.Equal(t, want[i], got, "password %q, salt %q", pw, salt)
		}
	}
}

// TestHashPasswordMatchesMkpasswd checks against mkpasswd (Debian's whois
// package, libxcrypt underneath), including the empty password openssl
// refuses. mkpasswd wants salts of 8 to 16 characters.
func TestHashPasswordMatchesMkpasswd(t *testing.T) {
	mkpasswd := requireTool(t, "mkpasswd")
	for _, salt := range []string{"saltsalt", "./0123456789ABCD"} {
		for _, pw := range append([]string{""}, cryptTestPasswords...) {
			out, err := exec.Command(mkpasswd, "-m", "sha-512", "-S", salt, pw).Output()
			require.NoError(t, err, "password %q", pw)
			got, err := HashPassword(pw, salt)
			require.NoError(t, err)
			assert.Equal(t, strings.TrimSpace(string(out)), got, "password %q, salt %q", pw, salt)
		}
	}
}

func TestHashPasswordRandomSalt(t *testing.T) {
	a, err := HashPassword("same", "")
	require.NoError(t, err)
	b, err := HashPassword("same", "")
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "two random salts collided")
	for _, h := range []string{a, b} {
		assert.Regexp(t, `^\$6\$[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{86}$`, h)
		assert.True(t, isCryptHash(h))
	}
}

func TestHashPasswordRejectsBadSalt(t *testing.T) {
	for _, salt := range []string{"seventeen-chars!!", "abcdefghijklmnopq", "bad$salt", "spa ce", "ümlaut", "rounds=5000$x"} {
		_, err := HashPassword("pw", salt)
		assert.ErrorIs(t, err, ErrInvalidSalt, "salt %q", salt)
	}
}

func TestIsCryptHash(t *testing.T) {
	good := []string{
		"$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1",
		"$6$rounds=10000$abcdefgh$b9OdXFDxih4hTi84n/0Xr2Eb4Je1XVUNPnusE55wyysH0zjrMTiKuZcnzsRaM68TycAOjcVYDvma8TDdtQpIU.",
		"$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZF/n/uRe5",
		"$y$j9T$ZIya5nXa7dVoFFDe3kfIr0$IBa.oUCv0W4OdZ1URnBay7smdoK3EAk0z9oFnkJGIJ8",
	}
	bad := []string{
		"", "hunter2", "$1$abc$def", "$6$salt$short",
		"$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1\n",
		"$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1 x",
	}
	for _, h := range good {
		assert.True(t, isCryptHash(h), h)
	}
	for _, h := range bad {
		assert.False(t, isCryptHash(h), "%q", h)
	}
}

func randomTestSalt(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = cryptAlphabet[rng.IntN(len(cryptAlphabet))]
	}
	return string(b)
}

// randomTestPassword draws printable runes from ASCII, Latin-1, CJK and
// emoji; no newline (openssl -stdin reads one password per line).
func randomTestPassword(rng *rand.Rand) string {
	ranges := [][2]rune{{0x21, 0x7e}, {0xa1, 0xff}, {0x4e00, 0x4fff}, {0x1f600, 0x1f64f}}
	var b strings.Builder
	for n := 1 + rng.IntN(90); n > 0; n-- {
		r := ranges[rng.IntN(len(ranges))]
		b.WriteRune(r[0] + rng.Int32N(r[1]-r[0]+1))
	}
	return b.String()
}
