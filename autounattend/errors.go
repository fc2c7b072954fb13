// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"errors"
	"fmt"
	"strings"
)

// FieldError is one problem with one field of a config. Field is the key a
// user writes (the HCL key, e.g. "admin_password" or "ssh_authorized_keys[1]").
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// ValidationError holds every problem found in one config.
type ValidationError struct {
	// What names the config, e.g. "windows" or "linux".
	What     string
	Problems []*FieldError
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	n := len(e.Problems)
	fmt.Fprintf(&b, "invalid %s config: %d problem", e.What, n)
	if n != 1 {
		b.WriteString("s")
	}
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// IsValidation reports whether err is (or wraps) a *ValidationError.
func IsValidation(err error) bool {
	var v *ValidationError
	return errors.As(err, &v)
}

// problems collects FieldErrors while a config is checked.
type problems struct {
	prefix string
	list   []*FieldError
}

func (p *problems) add(field, format string, args ...any) {
	p.list = append(p.list, &FieldError{Field: p.prefix + field, Msg: fmt.Sprintf(format, args...)})
}

func (p *problems) err(what string) error {
	if len(p.list) == 0 {
		return nil
	}
	return &ValidationError{What: what, Problems: p.list}
}
