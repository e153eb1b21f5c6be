// Command bareprobe runs a command with the cheapest probes a tracer can
// set on one function: an entry uprobe and a return uprobe (uprobe-multi
// links, as culprit trace uses) whose BPF programs do nothing. It is the
// floor bench/trace.sh compares tracers with. With -entry only the entry
// probe is set, with -return only the return probe: their difference from
// the pair is what each costs (bench/probecost.sh).
//
//	bareprobe [-entry|-return] BINARY FUNCTION -- CMD [ARGS...]
package main

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

func main() {
	args := os.Args[1:]
	entry, ret := true, true
	if len(args) > 0 && args[0] == "-entry" {
		ret, args = false, args[1:]
	} else if len(args) > 0 && args[0] == "-return" {
		entry, args = false, args[1:]
	}
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(os.Stderr, "usage: bareprobe [-entry|-return] BINARY FUNCTION -- CMD [ARGS...]")
		os.Exit(2)
	}
	if err := run(args[0], args[1], args[3:], entry, ret); err != nil {
		fmt.Fprintln(os.Stderr, "bareprobe:", err)
		os.Exit(1)
	}
}

func run(bin, fn string, argv []string, entry, ret bool) error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "bareprobe", Type: ebpf.Kprobe, AttachType: ebpf.AttachTraceUprobeMulti,
		License: "GPL", Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	if err != nil {
		return err
	}
	defer prog.Close()
	ex, err := link.OpenExecutable(bin)
	if err != nil {
		return err
	}
	if ret {
		l, err := ex.UretprobeMulti([]string{fn}, prog, nil)
		if err != nil {
			return err
		}
		defer l.Close()
	}
	if entry {
		l, err := ex.UprobeMulti([]string{fn}, prog, nil)
		if err != nil {
			return err
		}
		defer l.Close()
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
