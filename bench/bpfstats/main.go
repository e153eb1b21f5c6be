// Command bpfstats [-n] [PID] prints, for each BPF program of culprit's loaded in the
// kernel (named culprit_PID; with a PID argument, that recorder's only),
// where it is attached (the raw tracepoint of its link, when it has one),
// how many times it ran and its mean run time. A raw tracepoint program
// without a link is printed "detached" (the system call programs between
// the windows of --syscall-windows), others without one by their type.
// The kernel counts only while the sysctl kernel.bpf_stats_enabled is 1
// (bench/sampleprog.sh and bench/eventprogs.sh set it).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

func main() {
	raw := flag.Bool("n", false, "print numbers only: program id, name, where, runs, ns in all")
	flag.Parse()
	prefix := "culprit"
	if flag.NArg() > 0 {
		prefix = "culprit_" + flag.Arg(0)
	}
	at := attachments()
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
				where := at[id]
				if where == "" && info.Type == ebpf.RawTracepoint {
					// The system call programs between two windows:
					// sys_enter, then sys_exit, in the order loaded.
					where = "detached"
				} else if where == "" {
					where = info.Type.String()
				}
				if *raw {
					fmt.Printf("%d %s %s %d %d\n", id, info.Name, where, st.RunCount, st.Runtime.Nanoseconds())
					p.Close()
					continue
				}
				fmt.Printf("%s %s: %d runs, %v in all, %v per run, %d not run (recursion)\n", info.Name, where, st.RunCount, st.Runtime,
					st.Runtime/time.Duration(max(st.RunCount, 1)), st.RecursionMisses)
			}
		}
		p.Close()
	}
}

// attachments returns the raw tracepoint each program is attached to
// through a link, by program id.
func attachments() map[ebpf.ProgramID]string {
	at := make(map[ebpf.ProgramID]string)
	var it link.Iterator
	defer it.Close()
	for it.Next() {
		info, err := it.Link.Info()
		if err != nil {
			continue
		}
		if rt := info.RawTracepoint(); rt != nil && rt.Name != "" {
			at[info.Program] = rt.Name
		}
	}
	return at
}
