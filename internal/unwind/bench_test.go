package unwind

import (
	"encoding/binary"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/testutil"
	"golang.org/x/sys/unix"
)

type captured struct {
	s   sample
	r   *procResolver
	pcs []uint64
}

var (
	capMu    sync.Mutex
	captures = map[string]captured{}
)

// captureFor stops bin once in want (the innermost function) and returns the
// sample, its resolver and the unwound chain. Captures are reused across the
// benchmark's runs (the tables stay valid after the target exits).
func captureFor(b *testing.B, bin, want string, args ...string) (sample, *procResolver, []uint64) {
	capMu.Lock()
	defer capMu.Unlock()
	if c, ok := captures[bin]; ok {
		return c.s, c.r, c.pcs
	}
	needPtrace(b)
	tg := startTarget(b, 50*time.Millisecond, bin, args...)
	r := tg.resolver(nil)
	for i := 0; i < 100; i++ {
		time.Sleep(2 * time.Millisecond)
		if err := tg.stop(tg.pid); err != nil {
			b.Fatal(err)
		}
		s := tg.capture(tg.pid, copySize)
		tg.resume(tg.pid)
		pcs, complete := Unwind(s.regs, s.stack, r, 64)
		if names := r.symbolize(pcs); names[0] == want && complete {
			b.Logf("%d frames: %s", len(pcs), chain(names))
			captures[bin] = captured{s, r, pcs}
			return s, r, pcs
		}
	}
	b.Fatalf("never stopped in %s", want)
	return sample{}, nil, nil
}

func benchUnwind(b *testing.B, s sample, r Resolver, frames int) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pcs, _ := Unwind(s.regs, s.stack, r, 64)
		if len(pcs) != frames {
			b.Fatalf("got %d frames, want %d", len(pcs), frames)
		}
	}
	b.StopTimer()
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns/float64(frames), "ns/frame")
	b.ReportMetric(ns/float64(frames)*10, "ns/10frames")
}

// BenchmarkUnwindDeep: spin <- level_8 ... level_1 <- main <- libc <- _start,
// 13 frames through the executable's and libc's CFI.
func BenchmarkUnwindDeep(b *testing.B) {
	bin := testutil.C(b, "deep", []string{"deep.c"}, "-O2", "-fomit-frame-pointer")
	s, r, pcs := captureFor(b, bin, "spin", "100000")
	benchUnwind(b, s, r, len(pcs))
}

// BenchmarkUnwindLibc: write <- write_many <- main <- libc <- _start.
func BenchmarkUnwindLibc(b *testing.B) {
	bin := testutil.C(b, "syscalls", []string{"syscalls.c"}, "-O2", "-fomit-frame-pointer")
	s, r, pcs := captureFor(b, bin, "write", "1000000000")
	benchUnwind(b, s, r, len(pcs))
}

func BenchmarkMerge(b *testing.B) {
	cfi := []uint64{worker, dispatch2, mainY, libc1}
	fp := []uint64{worker, junk, mainY, libc1, libc2, start}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Merge(cfi, fp, false)
	}
}

func BenchmarkLoadTableLibc(b *testing.B) {
	path := libcPath(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := LoadTable(path); err != nil {
			b.Fatal(err)
		}
	}
}

// threadCPU returns the calling thread's CPU time in nanoseconds.
func threadCPU(b *testing.B) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkCFIExpr evaluates the DWARF expressions CFI uses: the PLT's CFA
// (rsp + 8 + (rip&15 >= 11 ? 8 : 0)), a register rule read from the stack
// copy (a signal frame's ucontext), and a typical val_expression. Each must
// allocate nothing: the unwinder runs them for every sample.
func BenchmarkCFIExpr(b *testing.B) {
	const sp = 0x7ffe0000
	stack := make([]byte, 512)
	binary.LittleEndian.PutUint64(stack[0xa8:], sp+0x100)
	u := &unwinder{stack: StackCopy{SP: sp, Data: stack}, valid: 1<<numRegs - 1}
	u.regs[regRSP] = sp
	u.regs[regRA] = 0x401026
	for _, c := range []struct {
		name string
		expr []byte
		push bool
		want uint64
	}{
		{"plt-cfa", []byte{elfx.OpBreg0 + 7, 8, elfx.OpBreg0 + 16, 0, elfx.OpLit0 + 15, elfx.OpAnd, elfx.OpLit0 + 11, elfx.OpGe, elfx.OpLit0 + 3, elfx.OpShl, elfx.OpPlus}, false, sp + 8},
		{"sigframe-deref", []byte{elfx.OpBreg0 + 7, 0xa8, 0x01, elfx.OpDeref}, false, sp + 0x100},
		{"val-expression", []byte{elfx.OpCallFrameCFA, elfx.OpConsts, 0x70, elfx.OpPlus}, true, sp + 0x20 - 16},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			t0 := threadCPU(b)
			for b.Loop() {
				if v, ok := u.eval(c.expr, sp+0x20, c.push); !ok || v != c.want {
					b.Fatalf("eval = %#x, %v; want %#x", v, ok, c.want)
				}
			}
			// On a busy machine wall time counts the time the thread
			// waited for a CPU; its own CPU time does not.
			b.ReportMetric(float64(threadCPU(b)-t0)/float64(b.N), "cpu-ns/op")
		})
	}
}
