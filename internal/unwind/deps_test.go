package unwind

import (
	"encoding/binary"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestUnwindDepsDecide: on real stops of programs with and without frame
// pointers, frameless code, an rbp-based CFA and libc, a chain depends on
// its Deps alone: with every other word of the copy and every register
// but IP, SP (and BP when UsedBP) scrambled, the unwind ends with the
// same chain; each return address of the chain is among the words; and
// scrambling a word of Deps that holds a return address changes the
// chain.
func TestUnwindDepsDecide(t *testing.T) {
	needPtrace(t)
	progs := []struct {
		name, src string
		flags     []string
		arg       string
	}{
		{"deep", "deep.c", []string{"-O2", "-fomit-frame-pointer"}, "100000"},
		{"hier", "hier.c", []string{"-O2", "-fomit-frame-pointer"}, "1000000"},
		{"hierfp", "hier.c", []string{"-O0", "-fno-omit-frame-pointer"}, "1000000"},
		{"syscalls", "syscalls.c", []string{"-O2", "-fomit-frame-pointer"}, "1000000000"},
	}
	for _, p := range progs {
		t.Run(p.name, func(t *testing.T) {
			bin := testutil.C(t, p.name, []string{p.src}, p.flags...)
			tg := startTarget(t, 50*time.Millisecond, bin, p.arg)
			r := tg.resolver(nil)
			rng := rand.New(rand.NewSource(1))
			var deps Deps
			checked, usedBP := 0, 0
			for i, u := range sampleThread(t, tg, r, tg.pid, 30) {
				pcs, stop, _ := UnwindDeps(nil, u.regs, AllRegs, u.stack, r, 64, &deps)
				if !slices.Equal(pcs, u.pcs) {
					t.Fatalf("stop %d: UnwindDeps gave %x, Unwind %x", i, pcs, u.pcs)
				}
				if stop != Complete || deps.Unsure {
					continue
				}
				checked++
				if deps.UsedBP {
					usedBP++
				}
				in := map[uint64]bool{}
				vals := map[uint64]bool{}
				for _, w := range deps.Words {
					in[w.Addr] = true
					vals[w.Val] = true
				}
				for k, pc := range pcs[1:] {
					if !vals[pc] {
						t.Errorf("stop %d: return address %d (%#x) is not among the words %+v", i, k+1, pc, deps.Words)
					}
				}
				// Scramble all the rest.
				regs := u.regs
				for reg := range regs {
					if reg != regRSP && reg != regRA && (reg != regRBP || !deps.UsedBP) {
						regs[reg] = rng.Uint64()
					}
				}
				data := slices.Clone(u.stack.Data)
				for off := 0; off+8 <= len(data); off += 8 {
					if !in[u.stack.SP+uint64(off)] {
						binary.LittleEndian.PutUint64(data[off:], rng.Uint64())
					}
				}
				st := u.stack
				st.Data = data
				again, stop2, _ := UnwindKnown(nil, regs, AllRegs, st, r, 64)
				if stop2 != Complete || !slices.Equal(again, pcs) {
					t.Errorf("stop %d: scrambled outside its %d words (UsedBP %v): %s (%v), want %s", i, len(deps.Words), deps.UsedBP,
						chain(r.symbolize(again)), stop2, chain(r.symbolize(pcs)))
				}
				// A return address of the chain changed changes it.
				for _, w := range deps.Words {
					if w.Val != pcs[len(pcs)-1] || len(pcs) < 3 {
						continue
					}
					bad := slices.Clone(u.stack.Data)
					binary.LittleEndian.PutUint64(bad[w.Addr-u.stack.SP:], w.Val+1)
					st.Data = bad
					if changed, _, _ := UnwindKnown(nil, u.regs, AllRegs, st, r, 64); slices.Equal(changed, pcs) {
						t.Errorf("stop %d: the outermost return address changed, the chain did not", i)
					}
				}
			}
			t.Logf("%d stops checked, %d with BP used", checked, usedBP)
			if checked < 10 {
				t.Errorf("only %d complete stops to check", checked)
			}
		})
	}
}
