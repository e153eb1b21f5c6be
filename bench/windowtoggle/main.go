// Command windowtoggle measures what it costs to turn a system call tracer
// on and off in windows, as `record --syscall-windows` does, by two
// mechanisms: attaching and detaching raw tracepoint links on raw_syscalls'
// sys_enter and sys_exit at every window's edge ("links"), or keeping the
// programs attached and flipping a flag in an array map that they read
// first, returning at once while it is 0 ("gate"). "none" attaches
// nothing, "closed" keeps the gated programs attached with the flag 0.
//
// For each mode, in turn (-rounds times, the modes interleaved), one
// thread pinned to CPU 1 makes getppid calls for -d and reports its CPU
// time per call (its own clock: less moved by other load than wall time),
// while another pinned to CPU 0 runs the windows (-on of every -period);
// the table gives, per mode, the median CPU ns per call, the toggling
// thread's CPU time per window (open and close) and the median wall time
// of one open and one close. Needs root and 2 CPUs.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

func pin(cpu int) {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "windowtoggle:", err)
	os.Exit(1)
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

type result struct {
	nsPerCall       float64
	cpuPerWindow    time.Duration
	openMed, clsMed time.Duration
}

func main() {
	d := flag.Duration("d", 2*time.Second, "how long each mode's system call loop runs")
	on := flag.Duration("on", 10*time.Millisecond, "window length")
	period := flag.Duration("period", 100*time.Millisecond, "window period")
	rounds := flag.Int("rounds", 5, "rounds of the modes, interleaved")
	flag.Parse()
	_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY})
	gateMap, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		fail(err)
	}
	// The program: the flag read first, as the system call programs do.
	prog := func() *ebpf.Program {
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, License: "GPL", Instructions: asm.Instructions{
			asm.StoreImm(asm.RFP, -8, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, gateMap.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -8),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
			asm.Return(),
		}})
		if err != nil {
			fail(err)
		}
		return p
	}
	progs := []*ebpf.Program{prog(), prog()}
	tps := []string{"sys_enter", "sys_exit"}
	attach := func() []link.Link {
		var ls []link.Link
		for i, tp := range tps {
			l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp, Program: progs[i]})
			if err != nil {
				fail(err)
			}
			ls = append(ls, l)
		}
		return ls
	}
	detach := func(ls []link.Link) {
		for _, l := range ls {
			l.Close()
		}
	}
	setGate := func(v uint64) {
		if err := gateMap.Update(uint32(0), v, 0); err != nil {
			fail(err)
		}
	}
	run := func(mode string) result {
		var ls []link.Link
		if mode == "gate" || mode == "closed" {
			ls = attach()
		}
		setGate(0)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var r result
		var opens, closes []time.Duration
		windows := 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			pin(0)
			c0 := threadCPU()
			open := false
			for {
				wait := *period - *on
				if open {
					wait = *on
				}
				select {
				case <-stop:
					if open && mode == "links" {
						detach(ls)
					}
					if windows > 0 {
						r.cpuPerWindow = (threadCPU() - c0) / time.Duration(windows)
					}
					return
				case <-time.After(wait):
				}
				t0 := time.Now()
				switch mode {
				case "links":
					if open {
						detach(ls)
					} else {
						ls = attach()
					}
				case "gate":
					if open {
						setGate(0)
					} else {
						setGate(1)
					}
				}
				if open {
					closes = append(closes, time.Since(t0))
					windows++
				} else {
					opens = append(opens, time.Since(t0))
				}
				open = !open
			}
		}()
		done := make(chan float64)
		go func() {
			pin(1)
			n := 0
			t0, c0 := time.Now(), threadCPU()
			for time.Since(t0) < *d {
				for i := 0; i < 1000; i++ {
					unix.Getppid()
				}
				n += 1000
			}
			done <- float64(threadCPU()-c0) / float64(n)
		}()
		r.nsPerCall = <-done
		close(stop)
		wg.Wait()
		if mode != "links" {
			detach(ls)
		}
		r.openMed, r.clsMed = median(opens), median(closes)
		return r
	}
	modes := []string{"none", "closed", "gate", "links"}
	res := map[string][]result{}
	for i := 0; i < *rounds; i++ {
		for _, m := range modes {
			res[m] = append(res[m], run(m))
		}
	}
	fmt.Printf("windows of %v every %v, getppid loop on CPU 1 for %v, %d rounds (medians)\n", *on, *period, *d, *rounds)
	fmt.Println("| mode | CPU ns per call | toggling CPU per window | open (wall) | close (wall) |\n|---|---|---|---|---|")
	for _, m := range modes {
		var ns []float64
		var cpu, op, cl []time.Duration
		for _, r := range res[m] {
			ns = append(ns, r.nsPerCall)
			cpu = append(cpu, r.cpuPerWindow)
			op = append(op, r.openMed)
			cl = append(cl, r.clsMed)
		}
		sort.Float64s(ns)
		fmt.Printf("| %s | %.0f | %v | %v | %v |\n", m, ns[len(ns)/2], median(cpu), median(op), median(cl))
	}
}

func median(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	v = append([]time.Duration(nil), v...)
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v[len(v)/2]
}
