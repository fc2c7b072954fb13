//go:build !unix

package safefile

// noFollow is 0 where open has no such flag; O_EXCL still refuses an
// existing name, a link included.
const noFollow = 0
