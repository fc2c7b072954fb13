// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Command journeys is make ci's last check of the user documentation's
// commands (internal/journeys): every command block of README.md and
// docs/*.md was run as written by a test of this run (the ledger the
// tests wrote, $CI_REPORT/journeys.ledger) or is marked with why it
// cannot run here and what covers its parts. It prints
//
//	journeys: N commands run, M marked
//
// and exits 1 naming each block that is neither.
//
//	go run ./scripts/journeys -ledger ci-report/journeys.ledger
//	go run ./scripts/journeys -list   # every block and its marker
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/journeys"
)

func main() {
	ledger := flag.String("ledger", "", "the ledger the tests wrote ($CI_REPORT/"+journeys.LedgerFile+")")
	list := flag.Bool("list", false, "list every command block with its marker, and check the markers only")
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := run(*root, *ledger, *list); err != nil {
		fmt.Fprintln(os.Stderr, "journeys:", err)
		os.Exit(1)
	}
}

func run(root, ledgerPath string, list bool) error {
	blocks, err := journeys.Load(root)
	var problems []string
	var p *journeys.Problems
	switch {
	case errors.As(err, &p):
		problems = append(problems, p.List...)
	case err != nil:
		return err
	}
	names, err := journeys.Names(root, blocks)
	if err != nil {
		return err
	}
	problems = append(problems, names...)
	if list {
		for _, b := range blocks {
			first, _, _ := strings.Cut(b.Text, "\n")
			switch {
			case b.Marker == nil:
				fmt.Printf("%s\tUNMARKED\t%s\n", b, first)
			case b.Marker.Run:
				fmt.Printf("%s\trun by %s\t%s\n", b, strings.Join(b.Marker.Tests, ", "), first)
			default:
				fmt.Printf("%s\tnot run\t%s\n", b, first)
			}
		}
		return report(problems)
	}
	if ledgerPath == "" {
		return errors.New("-ledger: give the ledger the tests wrote (make ci's $CI_REPORT/" + journeys.LedgerFile + "; run the tests with CI_REPORT set, as make ci does)")
	}
	ledger, err := journeys.ReadLedger(ledgerPath)
	if errors.Is(err, os.ErrNotExist) {
		problems = append(problems, fmt.Sprintf("%s does not exist: no test recorded a block it ran (run the tests with CI_REPORT set, as make ci does)", ledgerPath))
	} else if err != nil {
		return err
	}
	sum, checked := journeys.Check(blocks, ledger)
	problems = append(problems, checked...)
	fmt.Println(sum.Line())
	fmt.Printf("journeys: %d blocks run by tests, %d marked not run (%d of them covered by no test)\n", sum.RunBlocks, sum.MarkedBlocks, len(sum.Uncovered))
	return report(problems)
}

func report(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return errors.New((&journeys.Problems{List: problems}).Error())
}
