// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Command versions compares the version table (internal/versions) with
// the releases the Go module proxy serves: for each upstream (Kubernetes,
// containerd, runc, the CNI plugins, cri-tools) what each row holds, the
// newer patch and minor releases, and which default is past the end of
// life the table records for it.
//
//	go run ./cmd/versions            # GOPROXY's first entry, else proxy.golang.org
//	go run ./cmd/versions -proxy file:///srv/goproxy -today 2026-11-29
//
// The proxy serves a module's releases as its versions: k8s.io/kubernetes,
// github.com/containerd/containerd (1.x) and .../v2, github.com/opencontainers/runc,
// github.com/containernetworking/plugins, sigs.k8s.io/cri-tools. A module
// whose list the proxy refuses is reported as such, and a proxy that cannot
// be reached is reported; neither is a failure: the command exits 0, as it
// reads and changes nothing else.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv("GOPROXY"), os.Stdout, os.Stderr))
}

// run is the command: 0 whatever the proxy answers, 2 for bad flags.
func run(ctx context.Context, args []string, goproxy string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("versions", flag.ContinueOnError)
	fl.SetOutput(stderr)
	proxyFlag := fl.String("proxy", "", "module proxy URL, http(s):// or file:// (default: GOPROXY's first entry, else "+defaultProxy+")")
	todayFlag := fl.String("today", "", "judge end-of-life dates on this day, YYYY-MM-DD (default: today, UTC)")
	timeout := fl.Duration("timeout", 30*time.Second, "time allowed for each request to the proxy")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	now, err := today(*todayFlag)
	if err != nil {
		fmt.Fprintf(stderr, "versions: -today %q: want YYYY-MM-DD\n", *todayFlag)
		return 2
	}
	base, ok, from := *proxyFlag, true, "-proxy"
	if base == "" {
		base, ok = firstProxy(goproxy)
		from = "GOPROXY's first entry"
		if goproxy == "" {
			from = "GOPROXY unset"
		}
	}
	if !ok {
		fmt.Fprintf(stdout, "no module proxy to ask: %s is %q; set GOPROXY or -proxy to a proxy URL\n", from, base)
		return 0
	}
	fmt.Fprintf(stdout, "module proxy: %s (%s); end of life judged on %s\n", base, from, now.Format(time.DateOnly))
	p := proxyClient{base: base, client: &http.Client{Timeout: *timeout}}
	if err := report(ctx, stdout, p, now); err != nil {
		fmt.Fprintf(stdout, "the module proxy %s cannot be reached: %v\n", base, err)
	}
	return 0
}
