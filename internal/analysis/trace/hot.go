package trace

import (
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Share is one function's share of a sampled run's time, with its
// two-sigma binomial error (profile.Err).
type Share struct {
	Share float64
	Err   float64
}

// SampledShares reads the exclusive time of the functions of the
// executable exe (matched by base name) from the CPU samples of an
// untraced run (culprit record), as a trace of every function of exe
// would measure it: a sample counts for the innermost frame of its stack
// that lies in exe, so time in the C library or the kernel on behalf of a
// function is that function's, as a traced call's exclusive time includes
// its untraced callees. Only samples with one of roots (main, main.main
// for Go, and what main tail-calls: tracer.StackRoots) of exe on their
// stack count, when roots are given: shares are of root's inclusive time,
// as a trace measures the run (the loader's and the C library's start and
// exit left out). Names are source-level, clone suffixes removed
// (elfx.StripClones). It also returns the number of samples counted.
//
// This is the reference against which a trace's probe reductions are
// judged: a trace measures functions' times inflated by its own probes'
// cost, which falls on the frequently called ones.
func SampledShares(p *profile.Profile, exe string, roots []string) (map[string]Share, int) {
	counts, total, _ := SampledCounts(p, exe, roots, nil, nil)
	out := make(map[string]Share, len(counts))
	for f, n := range counts {
		out[f] = Share{Share: float64(n) / float64(total), Err: profile.Err(n, total)}
	}
	return out, total
}

// SampledCounts are SampledShares' sample counts by function, and their
// total. Samples taken while the kernel handled a uprobe's trap (a kernel
// frame of the breakpoint, the single step or the uprobe handlers on the
// stack) are not counted but returned apart, as traps: in a traced run they
// are the probes' own cost, which falls on the function probed, not the
// program's; an untraced run has none. probes are the file offsets of the
// entry probes set in exe: a sample whose innermost frame is within the
// instruction after one (trapAfter bytes) is counted as a trap's too. A
// timer interrupt that comes due while the kernel handles a trap with
// interrupts off is taken as soon as the program runs again, at the
// instruction after the breakpoint, so that such samples are the trap's
// time: half of those outside the traps' kernel frames in a trace of every
// function of sqlite3.
//
// open, when not nil, names the innermost traced call open on a thread
// at a time (InnermostOpen of the trace the samples were taken beside): a
// sample outside the traps whose stack holds no frame of exe counts for
// it. Such a stack was cut short by the trace itself (a return probe puts
// its trampoline's address where the traced call's return address was:
// time in a library function the call jumped to, or whose frames could
// not be unwound past, shows no caller) or was taken outside every traced
// call (the loader, exit), which then names none. A library function
// reached by a tail call (InnermostOpen's jumpsOut) is counted for the
// call the jumping function was made in, as an untraced run's stack and
// --hot-from count it: the frame that jumped is gone from that stack.
func SampledCounts(p *profile.Profile, exe string, roots []string, probes []uint64, open func(tid uint32, t uint64) string) (counts map[string]int, total, traps int) {
	base := filepath.Base(exe)
	in, isRoot, isTrap, isAfter := map[int32]bool{}, map[int32]bool{}, map[int32]bool{}, map[int32]bool{}
	for i, f := range p.Frames {
		in[int32(i)] = !f.Kernel && filepath.Base(f.Object) == base
		isRoot[int32(i)] = in[int32(i)] && slices.Contains(roots, f.Function)
		isTrap[int32(i)] = f.Kernel && TrapFrame(f.Function) || f.Object == profile.UprobesObject && f.Function != profile.Uretprobe
		if in[int32(i)] && len(probes) > 0 {
			k, _ := slices.BinarySearch(probes, f.Offset)
			isAfter[int32(i)] = k > 0 && f.Offset-probes[k-1] <= trapAfter
		}
	}
	counts = map[string]int{}
	for _, s := range p.Samples {
		if s.Event != recording.EventCPU {
			continue
		}
		st := p.StackAt(s.Stack)
		if len(roots) > 0 && !slices.ContainsFunc(st, func(fi int32) bool { return isRoot[fi] }) {
			continue
		}
		if slices.ContainsFunc(st, func(fi int32) bool { return isTrap[fi] }) || len(st) > 0 && isAfter[st[0]] {
			traps += s.N()
			continue
		}
		for _, fi := range st {
			if !in[fi] {
				continue
			}
			f := p.FrameAt(fi)
			if f.Inlined {
				continue // charged to the function it is inlined into, as probes see it
			}
			name := f.Function
			if name == "" {
				name = profile.Unknown
			}
			counts[elfx.StripClones(name)] += s.N()
			total += s.N()
			st = nil
			break
		}
		if len(st) > 0 && open != nil {
			if name := open(s.TID, s.Time); name != "" {
				counts[elfx.StripClones(name)] += s.N()
				total += s.N()
			}
		}
	}
	return counts, total, traps
}

// InnermostOpen returns a function that names the innermost call of p
// open on thread tid at time t (Summary.InnermostOpen of its calls, with
// jumpsOut).
func InnermostOpen(p *profile.Profile, jumpsOut map[string]bool) func(tid uint32, t uint64) string {
	return Summarize(p).InnermostOpen(jumpsOut)
}

// trapAfter bounds the length of a probed instruction (x86-64: 15 bytes).
const trapAfter = 15

// TrapFrame says whether a kernel function is on the path of a uprobe's
// trap on x86-64: the breakpoint's exception (exc_int3, do_int3_user), the
// single step of the displaced instruction (exc_debug_user), the work done
// on the way back to user mode (uprobe_notify_resume, handle_swbp,
// handle_singlestep, the return trampoline's handle_trampoline) and the
// handlers (uprobe_dispatcher, uprobe_multi_link_handler, the BPF
// programs they run); also the uretprobe system call the return
// trampoline makes. A user frame in the [uprobes] mapping (the trampoline,
// or an instruction being single-stepped out of line) is a trap's too,
// but not a return address there (profile.Uretprobe): that is a traced
// call in flight whose return probe is armed, not a trap being handled.
func TrapFrame(fn string) bool {
	for _, s := range []string{"int3", "exc_debug", "uprobe", "uretprobe", "handle_swbp", "handle_singlestep", "handle_trampoline", "bpf_prog_"} {
		if strings.Contains(fn, s) {
			return true
		}
	}
	return false
}

// PooledTrace is what one trace added to a pool of CPU samples taken
// beside probes: the samples it counted (SampledCounts' total), their
// rate, and the probe traps it made (two a recorded call).
type PooledTrace struct {
	Samples int `json:"samples"`
	Hz      int `json:"hz"`
	Traps   int `json:"traps"`
	// Counts are the trace's samples by function (SampledCounts'
	// counts), what UntracedByFunction fits. A pool written before they
	// were kept has traces without them.
	Counts map[string]int `json:"counts,omitempty"`
}

// ProbeTraps counts the probe traps of a traced run (Summary.Traps of
// its calls).
func ProbeTraps(p *profile.Profile) int {
	return Summarize(p).Traps()
}

// UntracedTotal estimates how many of the samples pooled from traces
// an untraced run of each would have taken: the program's own code runs
// slower after each probe trap, so a traced run's samples outside the
// traps grow with its traps. A least-squares line through the traces'
// seconds of samples against their traps gives the time each trap adds
// (its slope, perTrap); each trace's samples less that time for its
// traps, summed, is the total (the line's intercept, once a trace). It
// is not taken function by function: where a trap's slowing falls (the
// code it returns to, and on from there) is not known well enough, and
// a function's share less an estimate of its own slowing, floored at 0,
// leaves the rest of the slowing in the total, diluting every function
// far from the probes. ok is false when the traces cannot give a slope
// (fewer than two, or their trap counts within a factor of two of each
// other: the pool must hold traces of many and of few probes), or it or
// the total is not positive.
func UntracedTotal(traces []PooledTrace) (total float64, perTrap float64, ok bool) {
	var n, sx, sy, sxx, sxy float64
	minK, maxK := math.Inf(1), 0.0
	for _, t := range traces {
		if t.Hz <= 0 {
			continue
		}
		x, y := float64(t.Traps), float64(t.Samples)/float64(t.Hz)
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
		minK, maxK = min(minK, x), max(maxK, x)
	}
	if n < 2 || maxK < 2*minK || n*sxx-sx*sx <= 0 {
		return 0, 0, false
	}
	d := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	if d <= 0 {
		return 0, 0, false
	}
	for _, t := range traces {
		if t.Hz > 0 {
			total += float64(t.Samples) - d*float64(t.Traps)*float64(t.Hz)
		}
	}
	return total, d, total > 0
}

// SampledHot are the functions whose share of total samples is over
// percent, counting one as over when the upper end of its share's
// two-sigma binomial interval is, so that sampling noise does not drop
// one near the line.
func SampledHot(counts map[string]int, total int, percent float64) map[string]bool {
	hot := map[string]bool{}
	for f, n := range counts {
		if n >= total || float64(n)/float64(total)+profile.Err(n, total) > percent/100 {
			hot[f] = true
		}
	}
	return hot
}

// SampledDoubtful are the functions SampledHot judges hot only by the
// upper end of their share's interval (the share itself at most
// percent), with their shares: on a pool too small to tell a function at
// the line from one far under it, most of the functions judged hot are
// these (any function with two samples), and a probe budget may leave
// them out, the smallest share first, where it never leaves out one
// whose share is over the line.
func SampledDoubtful(counts map[string]int, total int, percent float64) map[string]float64 {
	out := map[string]float64{}
	hot := SampledHot(counts, total, percent)
	for f, n := range counts {
		if s := float64(n) / float64(total); hot[f] && n < total && s <= percent/100 {
			out[f] = s
		}
	}
	return out
}

// HotThreshold is dynamic probing's call threshold for a function the
// pipelines keep for its time: base (Perun's re-attaching threshold),
// but at most a tenth of count, the calls earlier traces saw it make in
// a run (0: not known), and at least MinHotCalls. A fixed threshold
// removes nothing from a function called a few hundred times a run, and
// on a short run those are most of the hot ones (lua5.4: 123 judged hot,
// 65 of them called more than 200 times, their threshold 15,000 of the
// run's 90,000 calls); a tenth of each function's calls bounds what the
// kept functions cost to a tenth of tracing them fully, the order by
// which the basic pipeline cuts the probes.
func HotThreshold(count, base uint64) uint64 {
	if count == 0 {
		return base
	}
	return min(base, max(MinHotCalls, count/10))
}

// MinHotCalls is the fewest calls of a function kept for its time that
// dynamic probing records before removing its probes: the median of 20
// calls is off by about a quarter of their standard deviation (1.25/√20),
// enough for Perun's median and quartiles to place a function's calls.
const MinHotCalls = 20

// FittedHot are the functions whose untraced samples, fitted function by
// function (UntracedByFunction), are over percent of the pool's untraced
// total, counting one as over when the upper end of its two-sigma
// interval is.
func FittedHot(by map[string]Untraced, total float64, percent float64) map[string]bool {
	hot := map[string]bool{}
	for f, u := range by {
		if u.Samples >= total || u.Samples+u.Err > total*percent/100 {
			hot[f] = true
		}
	}
	return hot
}

// Untraced is one function's samples in a pool of traces as untraced
// runs of each would have taken them, and two standard deviations of
// that estimate.
type Untraced struct {
	Samples float64
	Err     float64
}

// UntracedByFunction fits UntracedTotal's line function by function:
// each function's seconds of samples in each trace against the trace's
// probe traps. A function's intercept is its time in an untraced run; its
// slope, the slowing the traps left in its code. So a function seen only
// in traces of many probes (the code after their traps, the interpreter
// loops a trace of every function slows) is judged by the traces of few,
// where the program ran at its own speed, and a call-heavy function's
// samples under a trace of everything count as its traps' cost rather
// than its time. The estimates are linear in each trace's counts: a
// function's untraced samples are Σ c_t·n_t over its counts n_t in the
// traces, with the weights c_t of the line's intercept, and Err is two
// standard deviations of that sum taking each count as Poisson (variance
// n_t). The functions' estimates sum to UntracedTotal's total, as least
// squares is linear in the samples; one can be below 0 (its samples
// fell in traces of many traps, fewer in those of few than the line
// asks). Only traces with counts are read; ok is false as for
// UntracedTotal, or when any of them has no counts.
func UntracedByFunction(traces []PooledTrace) (by map[string]Untraced, total, perTrap float64, ok bool) {
	var use []PooledTrace
	for _, t := range traces {
		if t.Hz <= 0 {
			continue
		}
		if t.Counts == nil && t.Samples > 0 {
			return nil, 0, 0, false
		}
		use = append(use, t)
	}
	total, perTrap, ok = UntracedTotal(use)
	if !ok {
		return nil, 0, 0, false
	}
	var n, sx, sxx, h float64
	for _, t := range use {
		x := float64(t.Traps)
		n++
		sx += x
		sxx += x * x
		h += x * float64(t.Hz)
	}
	d := n*sxx - sx*sx
	type sum struct{ u, v float64 }
	sums := map[string]sum{}
	for _, t := range use {
		// The slope is Σ v_t·y_t with y_t = n_t/hz_t; the untraced
		// samples are Σ n_t less the slope times Σ hz_t·x_t.
		v := (n*float64(t.Traps) - sx) / d
		c := 1 - h*v/float64(t.Hz)
		for f, k := range t.Counts {
			s := sums[f]
			s.u += c * float64(k)
			s.v += c * c * float64(k)
			sums[f] = s
		}
	}
	by = make(map[string]Untraced, len(sums))
	for f, s := range sums {
		by[f] = Untraced{Samples: s.u, Err: 2 * math.Sqrt(s.v)}
	}
	return by, total, perTrap, true
}
