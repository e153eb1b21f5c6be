// Command hookfloor attaches empty BPF programs where a system call tracer
// would, for the whole machine, and holds them until it is killed: what
// the hooks cost by themselves, whatever a program records
// (docs/performance.md). Modes: rawtp (raw_syscalls sys_enter and sys_exit
// raw tracepoints, as internal/syscallprog's system call programs), fentry
// (fentry and fexit on the system call dispatcher x64_sys_call),
// switch-rawtp and switch-btf (sched_switch as a raw tracepoint and as a
// tp_btf program, as internal/syscallprog's switch program: what every
// context switch of the machine pays for a program there), and
// switch-clock (switch-btf reading the clock once, bpf_ktime_get_ns).
// Needs root.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

func main() {
	modes := map[string]bool{"rawtp": true, "fentry": true, "switch-rawtp": true, "switch-btf": true, "switch-clock": true}
	if len(os.Args) != 2 || !modes[os.Args[1]] {
		fmt.Fprintln(os.Stderr, "usage: hookfloor rawtp|fentry|switch-rawtp|switch-btf|switch-clock")
		os.Exit(2)
	}
	_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY})
	empty := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	var links []link.Link
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "hookfloor:", err)
		os.Exit(1)
	}
	switch os.Args[1] {
	case "rawtp":
		for _, tp := range []string{"sys_enter", "sys_exit"} {
			p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, License: "GPL", Instructions: empty})
			if err != nil {
				fail(err)
			}
			l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp, Program: p})
			if err != nil {
				fail(err)
			}
			links = append(links, l)
		}
	case "switch-rawtp":
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, License: "GPL", Instructions: empty})
		if err != nil {
			fail(err)
		}
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_switch", Program: p})
		if err != nil {
			fail(err)
		}
		links = append(links, l)
	case "switch-btf", "switch-clock":
		ins := empty
		if os.Args[1] == "switch-clock" {
			ins = append(asm.Instructions{asm.FnKtimeGetNs.Call()}, empty...)
		}
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "sched_switch",
			License: "GPL", Instructions: ins})
		if err != nil {
			fail(err)
		}
		l, err := link.AttachTracing(link.TracingOptions{Program: p, AttachType: ebpf.AttachTraceRawTp})
		if err != nil {
			fail(err)
		}
		links = append(links, l)
	case "fentry":
		for _, at := range []ebpf.AttachType{ebpf.AttachTraceFEntry, ebpf.AttachTraceFExit} {
			p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: at, AttachTo: "x64_sys_call",
				License: "GPL", Instructions: empty})
			if err != nil {
				fail(err)
			}
			l, err := link.AttachTracing(link.TracingOptions{Program: p})
			if err != nil {
				fail(err)
			}
			links = append(links, l)
		}
	}
	fmt.Println("attached")
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
	for _, l := range links {
		l.Close()
	}
}
