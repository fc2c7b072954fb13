// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/bootcommand"
)

// Linux input event key codes (linux/input-event-codes.h), the code set
// libvirt's SendKey takes with VIR_KEYCODE_SET_LINUX.
const (
	keyEsc        = 1
	keyBackspace  = 14
	keyTab        = 15
	keyEnter      = 28
	keyLeftCtrl   = 29
	keyLeftShift  = 42
	keyRightShift = 54
	keyLeftAlt    = 56
	keySpace      = 57
	keyF1         = 59 // F1-F10 are 59-68
	keyF11        = 87
	keyF12        = 88
	keyRightCtrl  = 97
	keyRightAlt   = 100
	keyHome       = 102
	keyUp         = 103
	keyPageUp     = 104
	keyLeft       = 105
	keyRight      = 106
	keyEnd        = 107
	keyDown       = 108
	keyPageDown   = 109
	keyInsert     = 110
	keyDelete     = 111
	keyLeftMeta   = 125
	keyRightMeta  = 126
	keyMenu       = 139
)

// usKeys maps a character on a US keyboard to its key and whether it needs shift.
var usKeys = func() map[rune]struct {
	code  uint32
	shift bool
} {
	m := map[rune]struct {
		code  uint32
		shift bool
	}{}
	rows := []struct {
		codes   []uint32
		plain   string
		shifted string
	}{
		{[]uint32{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, "1234567890-=", "!@#$%^&*()_+"},
		{[]uint32{16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27}, "qwertyuiop[]", "QWERTYUIOP{}"},
		{[]uint32{30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41}, "asdfghjkl;'`", "ASDFGHJKL:\"~"},
		{[]uint32{43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53}, "\\zxcvbnm,./", "|ZXCVBNM<>?"},
	}
	for _, r := range rows {
		plain, shifted := []rune(r.plain), []rune(r.shifted)
		for i, c := range r.codes {
			m[plain[i]] = struct {
				code  uint32
				shift bool
			}{c, false}
			m[shifted[i]] = struct {
				code  uint32
				shift bool
			}{c, true}
		}
	}
	m[' '] = struct {
		code  uint32
		shift bool
	}{keySpace, false}
	m['\n'] = struct {
		code  uint32
		shift bool
	}{keyEnter, false}
	m['\t'] = struct {
		code  uint32
		shift bool
	}{keyTab, false}
	return m
}()

// specialKeys maps boot_command's <special> names to key codes.
var specialKeys = map[string]uint32{
	"bs": keyBackspace, "del": keyDelete, "enter": keyEnter, "return": keyEnter, "esc": keyEsc,
	"tab": keyTab, "spacebar": keySpace, "insert": keyInsert, "home": keyHome, "end": keyEnd,
	"pageup": keyPageUp, "pagedown": keyPageDown, "up": keyUp, "down": keyDown, "left": keyLeft, "right": keyRight,
	"f11": keyF11, "f12": keyF12, "menu": keyMenu,
	"leftalt": keyLeftAlt, "leftctrl": keyLeftCtrl, "leftshift": keyLeftShift, "leftsuper": keyLeftMeta,
	"rightalt": keyRightAlt, "rightctrl": keyRightCtrl, "rightshift": keyRightShift, "rightsuper": keyRightMeta,
}

func init() {
	for i := 0; i < 10; i++ {
		specialKeys[fmt.Sprintf("f%d", i+1)] = keyF1 + uint32(i)
	}
}

// keySender is the part of Driver the boot command needs.
type keySender interface {
	SendKeys(name string, keys []uint32, hold time.Duration) error
}

// sendKeyDriver implements the SDK's bootcommand.BCDriver over libvirt's
// SendKey. libvirt presses a set of keys together and releases them after a
// hold time, so a key held with <leftShiftOn> is remembered here and pressed
// along with every following key until <leftShiftOff>.
type sendKeyDriver struct {
	domain   string
	keys     keySender
	interval time.Duration // pause between key presses (boot_keygroup_interval)
	held     []uint32
}

var _ bootcommand.BCDriver = (*sendKeyDriver)(nil)

const keyHold = 50 * time.Millisecond

func (d *sendKeyDriver) press(codes ...uint32) error {
	keys := append(append([]uint32{}, d.held...), codes...)
	if err := d.keys.SendKeys(d.domain, keys, keyHold); err != nil {
		return fmt.Errorf("sending keys: %w", err)
	}
	if d.interval > 0 {
		time.Sleep(d.interval)
	}
	return nil
}

func (d *sendKeyDriver) hold(code uint32, action bootcommand.KeyAction) error {
	switch action {
	case bootcommand.KeyOn:
		d.held = append(d.held, code)
	case bootcommand.KeyOff:
		for i, h := range d.held {
			if h == code {
				d.held = append(d.held[:i], d.held[i+1:]...)
				break
			}
		}
	default:
		return d.press(code)
	}
	return nil
}

func (d *sendKeyDriver) SendKey(r rune, action bootcommand.KeyAction) error {
	k, ok := usKeys[r]
	if !ok {
		return fmt.Errorf("boot_command: %q cannot be typed on a US keyboard layout", r)
	}
	if action != bootcommand.KeyPress {
		return d.hold(k.code, action)
	}
	if k.shift {
		return d.press(keyLeftShift, k.code)
	}
	return d.press(k.code)
}

func (d *sendKeyDriver) SendSpecial(special string, action bootcommand.KeyAction) error {
	code, ok := specialKeys[strings.ToLower(special)]
	if !ok {
		return fmt.Errorf("boot_command: unknown special key <%s>", special)
	}
	return d.hold(code, action)
}

// Flush has nothing to do: every key is sent as it comes.
func (d *sendKeyDriver) Flush() error { return nil }
