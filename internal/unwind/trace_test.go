package unwind

// Capturing real stacks without perf: start a target, stop it with ptrace
// (PTRACE_SEIZE + PTRACE_INTERRUPT), read its registers and a copy of its
// stack from /proc/PID/mem, and build a Resolver and a symbolizer from
// /proc/PID/maps and the ELF files. Only the standard library is used.

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/testutil"
)

const (
	ptraceSeize     = 0x4206
	ptraceInterrupt = 0x4207
	ptraceEventStop = 128
)

func ptrace(req, tid int) error {
	_, _, e := syscall.Syscall6(syscall.SYS_PTRACE, uintptr(req), uintptr(tid), 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// target is a running test program whose threads the test traces. All
// methods must be called from the goroutine that called startTarget, which
// is locked to its OS thread (ptrace requests must come from the tracer
// thread).
type target struct {
	t      testing.TB
	cmd    *exec.Cmd
	pid    int
	seized map[int]bool
}

// startTarget runs bin with args, locks the calling goroutine to its thread
// and lets the program run for warm before returning.
func startTarget(t testing.TB, warm time.Duration, bin string, args ...string) *target {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tg := &target{t: t, cmd: cmd, pid: cmd.Process.Pid, seized: map[int]bool{}}
	t.Cleanup(func() {
		cmd.Process.Kill()
		// Traced threads other than the leader must be reaped by the
		// tracer before the process can finish exiting.
		for tid := range tg.seized {
			if tid == tg.pid {
				continue
			}
			for {
				var ws syscall.WaitStatus
				_, err := syscall.Wait4(tid, &ws, syscall.WALL, nil)
				if err != nil || ws.Exited() || ws.Signaled() {
					break
				}
			}
		}
		cmd.Wait()
	})
	time.Sleep(warm)
	tg.waitLoaded(bin)
	return tg
}

// waitLoaded waits, for a dynamically linked bin, until the dynamic loader
// has mapped the C library: the resolver reads the mappings once, and on
// a busy machine the warm-up may end with the process still in the
// loader's start.
func (tg *target) waitLoaded(bin string) {
	f, err := elf.Open(bin)
	if err != nil {
		tg.t.Fatal(err)
	}
	dynamic := false
	for _, p := range f.Progs {
		dynamic = dynamic || p.Type == elf.PT_INTERP
	}
	f.Close()
	for deadline := time.Now().Add(30 * time.Second); dynamic; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", tg.pid))
		if err != nil {
			tg.t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			fs := strings.Fields(line)
			if len(fs) >= 6 && strings.Contains(fs[1], "x") && strings.HasPrefix(filepath.Base(fs[5]), "libc.so") {
				return
			}
		}
		if time.Now().After(deadline) {
			tg.t.Fatalf("%s has not mapped the C library in 30 s", bin)
		}
	}
}

// threads lists the target's thread ids.
func (tg *target) threads() []int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", tg.pid))
	if err != nil {
		tg.t.Fatal(err)
	}
	var tids []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, n)
		}
	}
	sort.Ints(tids)
	return tids
}

// stop seizes (first time) and interrupts thread tid and waits until it is
// in a ptrace stop. Signals that arrive meanwhile are passed on.
func (tg *target) stop(tid int) error {
	if !tg.seized[tid] {
		if err := ptrace(ptraceSeize, tid); err != nil {
			return fmt.Errorf("PTRACE_SEIZE %d: %w", tid, err)
		}
		tg.seized[tid] = true
	}
	if err := ptrace(ptraceInterrupt, tid); err != nil {
		return fmt.Errorf("PTRACE_INTERRUPT %d: %w", tid, err)
	}
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(tid, &ws, syscall.WALL, nil); err != nil {
			return fmt.Errorf("wait4 %d: %w", tid, err)
		}
		if ws.Exited() || ws.Signaled() {
			return fmt.Errorf("thread %d exited", tid)
		}
		if !ws.Stopped() {
			continue
		}
		if int(ws)>>16 == ptraceEventStop {
			return nil
		}
		// Signal-delivery stop: deliver the signal and keep waiting for
		// the interrupt's event stop.
		if err := syscall.PtraceCont(tid, int(ws.StopSignal())); err != nil {
			return err
		}
	}
}

func (tg *target) resume(tid int) {
	if err := syscall.PtraceCont(tid, 0); err != nil {
		tg.t.Fatalf("PTRACE_CONT %d: %v", tid, err)
	}
}

// sample is one captured stack: registers, stack copy and the frame-pointer
// chain a kernel would have walked.
type sample struct {
	tid   int
	regs  Regs
	stack StackCopy
	fp    []uint64
}

// capture reads the registers of the stopped thread tid and size bytes of
// its stack from SP (less if the stack mapping ends earlier).
func (tg *target) capture(tid, size int) sample {
	var pr syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(tid, &pr); err != nil {
		tg.t.Fatalf("PTRACE_GETREGS %d: %v", tid, err)
	}
	var r Regs
	r[0], r[1], r[2], r[3] = pr.Rax, pr.Rdx, pr.Rcx, pr.Rbx
	r[4], r[5], r[6], r[7] = pr.Rsi, pr.Rdi, pr.Rbp, pr.Rsp
	r[8], r[9], r[10], r[11] = pr.R8, pr.R9, pr.R10, pr.R11
	r[12], r[13], r[14], r[15] = pr.R12, pr.R13, pr.R14, pr.R15
	r[16] = pr.Rip
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", tg.pid))
	if err != nil {
		tg.t.Fatal(err)
	}
	defer mem.Close()
	buf := make([]byte, size)
	n, _ := mem.ReadAt(buf, int64(r[7]))
	s := sample{tid: tid, regs: r, stack: StackCopy{SP: r[7], Data: buf[:n]}}
	// The kernel's user callchain: IP, then return addresses along rbp.
	s.fp = []uint64{r[16]}
	var w [16]byte
	for fp := r[6]; len(s.fp) < 128; {
		if fp < r[7] || fp&7 != 0 {
			break
		}
		if n, _ := mem.ReadAt(w[:], int64(fp)); n != 16 {
			break
		}
		next := le64(w[:8])
		ra := le64(w[8:])
		if ra == 0 {
			break
		}
		s.fp = append(s.fp, ra)
		if next <= fp {
			break
		}
		fp = next
	}
	return s
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// mapping is one executable file mapping of the target.
type mapping struct {
	start, end, pgoff uint64
	path              string
	mod               Module
	hasMod            bool
}

// procResolver resolves PCs through the target's executable mappings.
type procResolver struct{ maps []mapping }

func (r *procResolver) Resolve(pc uint64) (Module, bool) {
	m := r.lookup(pc)
	if m == nil || !m.hasMod {
		return Module{}, false
	}
	return m.mod, true
}

func (r *procResolver) lookup(pc uint64) *mapping {
	i := sort.Search(len(r.maps), func(i int) bool { return r.maps[i].end > pc })
	if i < len(r.maps) && r.maps[i].start <= pc {
		return &r.maps[i]
	}
	return nil
}

var testCache TableCache

// resolver builds a Resolver from /proc/PID/maps, loading tables through
// cache (the global test cache when nil).
func (tg *target) resolver(cache *TableCache) *procResolver {
	if cache == nil {
		cache = &testCache
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", tg.pid))
	if err != nil {
		tg.t.Fatal(err)
	}
	defer f.Close()
	r := &procResolver{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.Contains(fields[1], "x") || !strings.HasPrefix(fields[5], "/") {
			continue
		}
		se := strings.SplitN(fields[0], "-", 2)
		start, _ := strconv.ParseUint(se[0], 16, 64)
		end, _ := strconv.ParseUint(se[1], 16, 64)
		off, _ := strconv.ParseUint(fields[2], 16, 64)
		m := mapping{start: start, end: end, pgoff: off, path: fields[5]}
		if tab, err := cache.Get(m.path); err == nil {
			if bias, ok := tab.Bias(start, off); ok {
				m.mod, m.hasMod = Module{Table: tab, Bias: bias}, true
			}
		}
		r.maps = append(r.maps, m)
	}
	return r
}

// symtab symbolizes addresses of one ELF file.
type symtab struct {
	syms []elf.Symbol // FUNC symbols sorted by value
	// bias for symbolization: runtime = vaddr + bias, from PT_LOAD.
	loads []elf.ProgHeader
}

var (
	symMu    sync.Mutex
	symFiles = map[string]*symtab{}
)

func loadSyms(path string) *symtab {
	symMu.Lock()
	defer symMu.Unlock()
	if s, ok := symFiles[path]; ok {
		return s
	}
	s := &symtab{}
	symFiles[path] = s
	f, err := elf.Open(path)
	if err != nil {
		return s
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			s.loads = append(s.loads, p.ProgHeader)
		}
	}
	add := func(syms []elf.Symbol) {
		for _, sym := range syms {
			if elf.ST_TYPE(sym.Info) == elf.STT_FUNC && sym.Value != 0 {
				s.syms = append(s.syms, sym)
			}
		}
	}
	if syms, err := f.Symbols(); err == nil {
		add(syms)
	} else if dbg := debugFile(f); dbg != nil {
		if syms, err := dbg.Symbols(); err == nil {
			add(syms)
		}
		dbg.Close()
	}
	if syms, err := f.DynamicSymbols(); err == nil {
		add(syms)
	}
	sort.SliceStable(s.syms, func(i, j int) bool { return s.syms[i].Value < s.syms[j].Value })
	return s
}

// debugFile opens the separate debug file of f by build id, if installed.
func debugFile(f *elf.File) *elf.File {
	sec := f.Section(".note.gnu.build-id")
	if sec == nil {
		return nil
	}
	data, err := sec.Data()
	if err != nil || len(data) < 16 {
		return nil
	}
	id := data[16:]
	if len(id) < 2 {
		return nil
	}
	p := filepath.Join("/usr/lib/debug/.build-id", fmt.Sprintf("%x", id[:1]), fmt.Sprintf("%x.debug", id[1:]))
	d, err := elf.Open(p)
	if err != nil {
		return nil
	}
	return d
}

// name returns the function containing the ELF address vaddr.
func (s *symtab) name(vaddr uint64) string {
	i := sort.Search(len(s.syms), func(i int) bool { return s.syms[i].Value > vaddr }) - 1
	for ; i >= 0; i-- {
		sym := s.syms[i]
		if vaddr < sym.Value+sym.Size || sym.Size == 0 {
			return sym.Name
		}
		if i > 0 && s.syms[i-1].Value != sym.Value {
			break
		}
	}
	return ""
}

// symbolize names each PC as "func" (or "?file+off" when unknown). PCs
// after the first are return addresses and are looked up at pc-1.
func (r *procResolver) symbolize(pcs []uint64) []string {
	out := make([]string, len(pcs))
	for i, pc := range pcs {
		if i > 0 {
			pc--
		}
		m := r.lookup(pc)
		if m == nil {
			out[i] = fmt.Sprintf("?%#x", pc)
			continue
		}
		s := loadSyms(m.path)
		// ELF vaddr through the segment that maps pgoff.
		var vaddr uint64
		found := false
		for _, p := range s.loads {
			if p.Off&^(pageSize-1) == m.pgoff || (m.pgoff >= p.Off&^(pageSize-1) && m.pgoff < p.Off+p.Filesz) {
				vaddr = pc - m.start + m.pgoff - p.Off + p.Vaddr
				found = true
				break
			}
		}
		name := ""
		if found {
			name = s.name(vaddr)
			if name == "" && i > 0 {
				// A signal frame's "return address" is the trampoline's
				// first byte (__restore_rt), not an address after a call.
				name = s.name(vaddr + 1)
			}
		}
		if name == "" {
			name = fmt.Sprintf("?%s+%#x", filepath.Base(m.path), pc-m.start+m.pgoff)
		}
		out[i] = name
	}
	return out
}

// needPtrace skips (or fails in CI) when this machine does not allow
// tracing a child.
func needPtrace(t testing.TB) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	err := ptrace(ptraceSeize, cmd.Process.Pid)
	testutil.Need(t, err == nil || !errors.Is(err, syscall.EPERM), fmt.Sprintf("ptrace: %v", err))
	if err != nil {
		t.Fatalf("PTRACE_SEIZE: %v", err)
	}
}
