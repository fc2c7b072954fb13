//go:build unix

package safefile

import "syscall"

// noFollow makes opening a link fail instead of opening its target.
const noFollow = syscall.O_NOFOLLOW
