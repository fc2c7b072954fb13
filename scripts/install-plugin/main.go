// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Command install-plugin puts a release build of the plugin where `packer
// init` would install it (internal/packerinit), for a packer without
// `packer plugins install --path`, and prints the installed path:
//
//	go run ./scripts/install-plugin <plugin directory> <plugin binary>
package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/kubenode/packer-plugin-kubenode/internal/packerinit"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: install-plugin <plugin directory> <plugin binary>")
		os.Exit(2)
	}
	path, err := packerinit.Install(os.Args[1], os.Args[2], runtime.GOOS, runtime.GOARCH)
	if err != nil {
		fmt.Fprintln(os.Stderr, "install-plugin:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}
