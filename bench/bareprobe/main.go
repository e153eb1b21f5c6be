// Command bareprobe runs a command with the cheapest probes a tracer can
// set on one function: an entry uprobe and a return uprobe (uprobe-multi
// links, as culprit trace uses) whose BPF programs do nothing. It is the
// floor bench/trace.sh compares tracers with. With -entry only the entry
// probe is set, with -return only the return probe: their difference from
// the pair is what each costs (bench/probecost.sh). With -ret-insn the
// return probe is a uprobe on each RET instruction of the function (found
// by linear disassembly), as culprit trace sets for Go code and for
// functions that call something in objects that unwind: the floor of a
// return taken there instead of by a uretprobe.
//
//	bareprobe [-entry|-return|-ret-insn] BINARY FUNCTION -- CMD [ARGS...]
package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/arch/x86/x86asm"
)

func main() {
	args := os.Args[1:]
	entry, ret, retInsn := true, true, false
	if len(args) > 0 && args[0] == "-entry" {
		ret, args = false, args[1:]
	} else if len(args) > 0 && args[0] == "-return" {
		entry, args = false, args[1:]
	} else if len(args) > 0 && args[0] == "-ret-insn" {
		retInsn, args = true, args[1:]
	}
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(os.Stderr, "usage: bareprobe [-entry|-return|-ret-insn] BINARY FUNCTION -- CMD [ARGS...]")
		os.Exit(2)
	}
	if err := run(args[0], args[1], args[3:], entry, ret, retInsn); err != nil {
		fmt.Fprintln(os.Stderr, "bareprobe:", err)
		os.Exit(1)
	}
}

func run(bin, fn string, argv []string, entry, ret, retInsn bool) error {
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
	if retInsn {
		offs, err := retOffsets(bin, fn)
		if err != nil {
			return err
		}
		syms := make([]string, len(offs))
		for i := range syms {
			syms[i] = fn
		}
		l, err := ex.UprobeMulti(syms, prog, &link.UprobeMultiOptions{Offsets: offs})
		if err != nil {
			return err
		}
		defer l.Close()
	} else if ret {
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

// retOffsets are the offsets of fn's RET instructions from its start, by
// linear disassembly of its bytes (an endbr64, which x86asm does not
// know, is stepped over).
func retOffsets(bin, fn string) ([]uint64, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("reading %s's symbols: %w", bin, err)
	}
	for _, s := range syms {
		if s.Name != fn || elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section]
		data, err := sec.Data()
		if err != nil {
			return nil, err
		}
		if s.Value < sec.Addr || s.Value+s.Size > sec.Addr+uint64(len(data)) {
			return nil, fmt.Errorf("%s lies outside its section in %s", fn, bin)
		}
		code := data[s.Value-sec.Addr : s.Value-sec.Addr+s.Size]
		var offs []uint64
		for pc := 0; pc < len(code); {
			if bytes.HasPrefix(code[pc:], []byte{0xf3, 0x0f, 0x1e, 0xfa}) {
				pc += 4
				continue
			}
			in, err := x86asm.Decode(code[pc:], 64)
			if err != nil {
				pc++
				continue
			}
			if in.Op == x86asm.RET {
				offs = append(offs, uint64(pc))
			}
			pc += in.Len
		}
		if len(offs) == 0 {
			return nil, fmt.Errorf("%s in %s has no RET instruction", fn, bin)
		}
		return offs, nil
	}
	return nil, fmt.Errorf("no function %s in %s", fn, bin)
}
