// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package remote

import (
	"fmt"
	"strings"
	"testing"
)

// A guest command's output is held in memory only up to a bound: a guest
// that prints without end cannot exhaust Packer's memory. What is kept is
// the end of the output, in whole lines, and it says that the beginning
// was dropped.
func TestLineTailKeepsTheEndOfTheOutputWithinItsBound(t *testing.T) {
	tail := NewLineTail()
	line := strings.Repeat("x", 99) + "\n"
	total := 0
	for i := 0; total < 8*maxOutput; i++ {
		s := fmt.Sprintf("%08d %s", i, line)
		if _, err := tail.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		total += len(s)
	}
	if c := tail.buf.Cap(); c > 4*maxOutput {
		t.Errorf("the buffer has grown to %d bytes for %d kept", c, maxOutput)
	}
	// One write larger than the bound.
	big := strings.Repeat(line, 2*maxOutput/len(line)) + "the last line\n"
	tail.Write([]byte(big))
	total += len(big)

	all := tail.All()
	if len(all) > maxOutput+200 {
		t.Errorf("%d bytes of output kept, want about %d at most", len(all), maxOutput)
	}
	if c := tail.buf.Cap(); c > 4*maxOutput {
		t.Errorf("the buffer has grown to %d bytes for %d kept", c, maxOutput)
	}
	first, rest, _ := strings.Cut(all, "\n")
	if want := fmt.Sprintf("[kubenode-bake: the first %d bytes of this output were dropped: only the last %d are kept]", total-len(rest), maxOutput); first != want {
		t.Errorf("the first line is %q, want %q", first, want)
	}
	if !strings.HasPrefix(rest, strings.Repeat("x", 99)+"\n") {
		t.Errorf("the kept output does not start with a whole line: %q", rest[:120])
	}
	if !strings.HasSuffix(all, "the last line\n") {
		t.Errorf("the end of the output is not kept")
	}
	if s := tail.String(); !strings.HasSuffix(s, "  the last line") || strings.Count(s, "\n") != 24 {
		t.Errorf("String() is not the last 25 lines:\n%s", s)
	}

	// Short output is kept whole, and says nothing more.
	short := NewLineTail()
	short.Write([]byte("one\ntwo\n"))
	if got := short.All(); got != "one\ntwo\n" {
		t.Errorf("All() = %q", got)
	}
}
