package dwarfx

// A minimal breakpoint debugger for tests: it runs a program under ptrace
// with ASLR disabled (as gdb does), stops it at int3 breakpoints and hands
// each stop's registers and memory to a callback. This package never uses
// ptrace itself; collectors do.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/culprit-dev/culprit/internal/testutil"
	"golang.org/x/sys/unix"
)

type ptraceStop struct {
	pid  int
	bias uint64
	f0   *Frame
}

func (s *ptraceStop) read(addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &b[0], Len: uint64(len(b))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(s.pid, local, remote, 0)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("short read at %#x: %d of %d", addr, n, len(b))
	}
	return nil
}

// testEnv is the environment of both the ptrace run and gdb's inferior:
// the test's environment without the variables gdb sets for its inferior,
// so that both stacks are laid out alike.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LINES=") || strings.HasPrefix(kv, "COLUMNS=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

const addrNoRandomize = 0x0040000

// runStops runs bin, stopping at each ELF address in addrs of obj (a
// shared object, or bin itself when empty) at most limit times, and calls
// onStop at each stop (the thread is stopped at the breakpoint address,
// registers as if the breakpoint were not there). For a shared object, the
// breakpoints are set once the program reaches main.
func runStops(t *testing.T, bin, obj string, addrs []uint64, limit int, onStop func(pc uint64, s *ptraceStop)) string {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	old, _, errno := syscall.RawSyscall(syscall.SYS_PERSONALITY, 0xffffffff, 0, 0)
	if errno != 0 {
		t.Fatalf("personality: %v", errno)
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PERSONALITY, old|addrNoRandomize, 0, 0); errno != 0 {
		t.Fatalf("personality: %v", errno)
	}
	stdout, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	cmd := exec.Command(bin)
	cmd.Env = testEnv()
	cmd.Stdout = stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	err = cmd.Start()
	syscall.RawSyscall(syscall.SYS_PERSONALITY, old, 0, 0)
	if errors.Is(err, syscall.EPERM) {
		testutil.Need(t, false, "ptrace not permitted: "+err.Error())
	}
	if err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	pid := cmd.Process.Pid
	defer cmd.Process.Kill()
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		t.Fatalf("waiting for exec stop: %v %v", err, ws)
	}
	bias := loadBias(t, pid, bin)
	if obj != "" {
		// Run to main, when shared objects are loaded.
		main := symbol(t, bin, "main")
		var b [1]byte
		if _, err := unix.PtracePeekText(pid, uintptr(main+bias), b[:]); err != nil {
			t.Fatalf("peek main: %v", err)
		}
		if _, err := unix.PtracePokeText(pid, uintptr(main+bias), []byte{0xcc}); err != nil {
			t.Fatalf("poke main: %v", err)
		}
		if err := unix.PtraceCont(pid, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
			t.Fatalf("running to main: %v %v", err, ws)
		}
		var regs unix.PtraceRegs
		if err := unix.PtraceGetRegs(pid, &regs); err != nil {
			t.Fatal(err)
		}
		regs.Rip--
		if err := unix.PtraceSetRegs(pid, &regs); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.PtracePokeText(pid, uintptr(main+bias), b[:]); err != nil {
			t.Fatal(err)
		}
		bias = loadBias(t, pid, obj)
	}

	type bp struct {
		orig byte
		hits int
	}
	bps := map[uint64]*bp{}
	poke := func(a uint64, v byte) {
		if _, err := unix.PtracePokeText(pid, uintptr(a+bias), []byte{v}); err != nil {
			t.Fatalf("poke %#x: %v", a, err)
		}
	}
	for _, a := range addrs {
		var b [1]byte
		if _, err := unix.PtracePeekText(pid, uintptr(a+bias), b[:]); err != nil {
			t.Fatalf("peek %#x: %v", a, err)
		}
		bps[a] = &bp{orig: b[0]}
		poke(a, 0xcc)
	}
	sig := 0
	for {
		if err := unix.PtraceCont(pid, sig); err != nil {
			t.Fatalf("cont: %v", err)
		}
		sig = 0
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
			t.Fatalf("wait: %v", err)
		}
		if ws.Exited() || ws.Signaled() {
			break
		}
		if ws.StopSignal() != syscall.SIGTRAP {
			sig = int(ws.StopSignal())
			continue
		}
		var regs unix.PtraceRegs
		if err := unix.PtraceGetRegs(pid, &regs); err != nil {
			t.Fatalf("getregs: %v", err)
		}
		pc := regs.Rip - 1 - bias
		b := bps[pc]
		if b == nil {
			continue
		}
		regs.Rip--
		if err := unix.PtraceSetRegs(pid, &regs); err != nil {
			t.Fatalf("setregs: %v", err)
		}
		s := &ptraceStop{pid: pid, bias: bias}
		s.f0 = frameOf(t, pid, &regs, bias, s.read)
		onStop(pc, s)
		b.hits++
		poke(pc, b.orig)
		if err := unix.PtraceSingleStep(pid); err != nil {
			t.Fatalf("singlestep: %v", err)
		}
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
			t.Fatalf("wait after step: %v %v", err, ws)
		}
		if b.hits < limit {
			poke(pc, 0xcc)
		}
	}
	out, err := os.ReadFile(stdout.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// frameOf builds frame 0 from a stop: every general and SSE register.
func frameOf(t *testing.T, pid int, r *unix.PtraceRegs, bias uint64, read func(uint64, []byte) error) *Frame {
	f := &Frame{Bias: bias, Mem: read}
	for n, v := range []uint64{r.Rax, r.Rdx, r.Rcx, r.Rbx, r.Rsi, r.Rdi, r.Rbp, r.Rsp,
		r.R8, r.R9, r.R10, r.R11, r.R12, r.R13, r.R14, r.R15, r.Rip} {
		f.SetReg(n, v)
	}
	var fx [512]byte // user_fpregs_struct (fxsave layout): xmm0 at 160
	if _, _, errno := syscall.Syscall6(syscall.SYS_PTRACE, unix.PTRACE_GETFPREGS, uintptr(pid), 0,
		uintptr(unsafe.Pointer(&fx[0])), 0, 0); errno != 0 {
		t.Fatalf("PTRACE_GETFPREGS: %v", errno)
	}
	for k := 0; k < 16; k++ {
		copy(f.XMM[k][:], fx[160+16*k:])
	}
	f.XMMValid = 0xffff
	return f
}

// loadBias reads the runtime bias of bin from /proc/pid/maps.
func loadBias(t *testing.T, pid int, bin string) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[5] != bin {
			continue
		}
		if off, _ := strconv.ParseUint(f[2], 16, 64); off != 0 {
			continue
		}
		lo, _ := strconv.ParseUint(strings.Split(f[0], "-")[0], 16, 64)
		return lo - firstLoadVaddr(t, bin)
	}
	t.Fatalf("%s not mapped in %d", bin, pid)
	return 0
}

func firstLoadVaddr(t *testing.T, bin string) uint64 {
	out, err := exec.Command("readelf", "-lW", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 3 && f[0] == "LOAD" {
			v, _ := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64)
			return v &^ 0xfff
		}
	}
	t.Fatalf("no LOAD segment in %s", bin)
	return 0
}
