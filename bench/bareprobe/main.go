// Command bareprobe runs a command with the cheapest probes a tracer can
// set on one function: an entry uprobe and a return uprobe (uprobe-multi
// links, as culprit trace uses) whose BPF programs do nothing. It is the
// floor bench/trace.sh compares tracers with.
//
//	bareprobe BINARY FUNCTION -- CMD [ARGS...]
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
	if len(os.Args) < 5 || os.Args[3] != "--" {
		fmt.Fprintln(os.Stderr, "usage: bareprobe BINARY FUNCTION -- CMD [ARGS...]")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[4:]); err != nil {
		fmt.Fprintln(os.Stderr, "bareprobe:", err)
		os.Exit(1)
	}
}

func run(bin, fn string, argv []string) error {
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
	ret, err := ex.UretprobeMulti([]string{fn}, prog, nil)
	if err != nil {
		return err
	}
	defer ret.Close()
	entry, err := ex.UprobeMulti([]string{fn}, prog, nil)
	if err != nil {
		return err
	}
	defer entry.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
