// Command bpfstats prints, for each BPF program of culprit's loaded in the
// kernel (named culprit_PID; with a PID argument, that recorder's only), how
// many times it ran and its mean run time.
// The kernel counts only while the sysctl kernel.bpf_stats_enabled is 1
// (bench/sampleprog.sh sets it).
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf"
)

func main() {
	prefix := "culprit"
	if len(os.Args) > 1 {
		prefix = "culprit_" + os.Args[1]
	}
	id := ebpf.ProgramID(0)
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "listing BPF programs:", err)
			os.Exit(1)
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		info, err := p.Info()
		if err == nil && strings.HasPrefix(info.Name, prefix) {
			if st, err := p.Stats(); err == nil {
				fmt.Printf("%s: %d runs, %v in all, %v per run, %d not run (recursion)\n", info.Name, st.RunCount, st.Runtime,
					st.Runtime/time.Duration(max(st.RunCount, 1)), st.RecursionMisses)
			}
		}
		p.Close()
	}
}
