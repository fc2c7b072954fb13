// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"crypto/rand"
	"crypto/sha512"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// SHA-512 crypt ("$6$", Ulrich Drepper's "Unix crypt using SHA-256 and
// SHA-512", the scheme glibc, libxcrypt, openssl passwd -6 and mkpasswd
// implement). Written here rather than imported: it is ~80 lines, and the
// tests check it against openssl and mkpasswd.
const (
	cryptAlphabet   = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	maxCryptSalt    = 16
	sha512CryptRuns = 5000 // the default; a hash without "rounds=" uses it
)

var cryptSaltRE = regexp.MustCompile(`^[./0-9A-Za-z]{1,16}$`)

// ErrInvalidSalt is returned by HashPassword for a salt crypt cannot carry.
var ErrInvalidSalt = errors.New("a crypt salt is 1 to 16 characters from [./0-9A-Za-z]")

// HashPassword returns the SHA-512 crypt hash of plain ("$6$salt$..."), the
// form /etc/shadow, chpasswd -e, cloud-init, subiquity, d-i and Anaconda
// take. An empty salt draws 16 random characters; a fixed salt makes the
// result reproducible (for golden files), at the cost of equal passwords
// hashing equally.
func HashPassword(plain, salt string) (string, error) {
	if salt == "" {
		var err error
		if salt, err = randomCryptSalt(); err != nil {
			return "", err
		}
	}
	if !cryptSaltRE.MatchString(salt) {
		return "", fmt.Errorf("password salt %q: %w", salt, ErrInvalidSalt)
	}
	return "$6$" + salt + "$" + sha512Crypt([]byte(plain), []byte(salt), sha512CryptRuns), nil
}

// randomCryptSalt draws 16 salt characters from crypto/rand. 64 divides 256,
// so masking a byte to 6 bits picks each character with equal chance.
func randomCryptSalt() (string, error) {
	b := make([]byte, maxCryptSalt)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("drawing a password salt: %w", err)
	}
	for i := range b {
		b[i] = cryptAlphabet[b[i]&0x3f]
	}
	return string(b), nil
}

// sha512Crypt returns the 86-character hash part of a "$6$" string.
func sha512Crypt(key, salt []byte, rounds int) string {
	// Digest B: key, salt, key.
	h := sha512.New()
	h.Write(key)
	h.Write(salt)
	h.Write(key)
	digestB := h.Sum(nil)

	// Digest A: key, salt, then B once per 64 bytes of key (and its prefix
	// for the rest), then B or the key for each bit of the key's length.
	h.Reset()
	h.Write(key)
	h.Write(salt)
	n := len(key)
	for ; n > sha512.Size; n -= sha512.Size {
		h.Write(digestB)
	}
	h.Write(digestB[:n])
	for n = len(key); n > 0; n >>= 1 {
		if n&1 != 0 {
			h.Write(digestB)
		} else {
			h.Write(key)
		}
	}
	digestA := h.Sum(nil)

	// P: digest of the key repeated len(key) times, stretched to len(key).
	h.Reset()
	for range key {
		h.Write(key)
	}
	p := cryptStretch(h.Sum(nil), len(key))

	// S: digest of the salt repeated 16+A[0] times, cut to len(salt).
	h.Reset()
	for i := 0; i < 16+int(digestA[0]); i++ {
		h.Write(salt)
	}
	s := cryptStretch(h.Sum(nil), len(salt))

	c := digestA
	for i := 0; i < rounds; i++ {
		h.Reset()
		if i&1 != 0 {
			h.Write(p)
		} else {
			h.Write(c)
		}
		if i%3 != 0 {
			h.Write(s)
		}
		if i%7 != 0 {
			h.Write(p)
		}
		if i&1 != 0 {
			h.Write(c)
		} else {
			h.Write(p)
		}
		c = h.Sum(c[:0])
	}
	return cryptBase64SHA512(c)
}

// cryptStretch repeats d until it is n bytes long.
func cryptStretch(d []byte, n int) []byte {
	out := make([]byte, 0, n)
	for len(out) < n {
		out = append(out, d[:min(len(d), n-len(out))]...)
	}
	return out
}

// sha512CryptOrder is the byte order the scheme encodes the final digest
// in: 21 groups of three bytes (most significant first), then byte 63.
var sha512CryptOrder = [21][3]int{
	{0, 21, 42}, {22, 43, 1}, {44, 2, 23}, {3, 24, 45}, {25, 46, 4},
	{47, 5, 26}, {6, 27, 48}, {28, 49, 7}, {50, 8, 29}, {9, 30, 51},
	{31, 52, 10}, {53, 11, 32}, {12, 33, 54}, {34, 55, 13}, {56, 14, 35},
	{15, 36, 57}, {37, 58, 16}, {59, 17, 38}, {18, 39, 60}, {40, 61, 19},
	{62, 20, 41},
}

// cryptBase64SHA512 encodes the 64-byte digest as crypt's base64: little
// end first, in cryptAlphabet, 4 characters per group and 2 for the last byte.
func cryptBase64SHA512(d []byte) string {
	var b strings.Builder
	put := func(w uint32, chars int) {
		for ; chars > 0; chars-- {
			b.WriteByte(cryptAlphabet[w&0x3f])
			w >>= 6
		}
	}
	for _, g := range sha512CryptOrder {
		put(uint32(d[g[0]])<<16|uint32(d[g[1]])<<8|uint32(d[g[2]]), 4)
	}
	put(uint32(d[63]), 2)
	return b.String()
}

// Crypt hashes Linux installers accept in place of a password. Checking the
// shape catches a pasted plaintext password or a truncated hash before an
// install that nobody could then log into.
var (
	sha512HashRE   = regexp.MustCompile(`^\$6\$(rounds=[0-9]{1,9}\$)?[./0-9A-Za-z]{0,16}\$[./0-9A-Za-z]{86}$`)
	sha256HashRE   = regexp.MustCompile(`^\$5\$(rounds=[0-9]{1,9}\$)?[./0-9A-Za-z]{0,16}\$[./0-9A-Za-z]{43}$`)
	yescryptHashRE = regexp.MustCompile(`^\$y\$[./0-9A-Za-z]+\$[./0-9A-Za-z]{1,86}\$[./0-9A-Za-z]{43}$`)
)

// isCryptHash reports whether s is a SHA-512, SHA-256 or yescrypt crypt hash.
func isCryptHash(s string) bool {
	return sha512HashRE.MatchString(s) || sha256HashRE.MatchString(s) || yescryptHashRE.MatchString(s)
}
