package tracer

import (
	"slices"
	"testing"

	"github.com/culprit-dev/culprit/internal/proc"
)

// TestFixStack gives trampolines back the return addresses of the calls
// in flight: in a frame-pointer chain that goes on past them, in a CFI
// unwind that stopped at the first (with or without junk after it), with
// a call in flight that is not on the stack (passed over), with a call
// tail-called from a traced one (sharing its caller's return address),
// with the IP inside the trampoline, and with an untraced function
// between traced ones (the stack ends there, cut).
func TestFixStack(t *testing.T) {
	const tr, exe = 0x7fffffffe000, "/bin/prog"
	// Functions of the program at these file offsets, mapped at 0x400000
	// from offset 0: main, a, b, c, untraced u.
	code := map[string][2]uint64{"main": {0x1000, 0x1100}, "a": {0x1100, 0x1200}, "b": {0x1200, 0x1300}, "c": {0x1300, 0x1400}, "u": {0x1400, 0x1500}}
	targets := []Target{
		{Object: exe, Function: "a", Code: code["a"]},
		{Object: exe, Function: "b", Code: code["b"]},
		{Object: exe, Function: "c", Code: code["c"]},
	}
	at := func(fn string, off uint64) uint64 { return 0x400000 + code[fn][0] + off }
	sp := &proc.Space{}
	sp.Add(proc.Mapping{Start: 0x400000, End: 0x402000, Path: exe})
	sp.Add(proc.Mapping{Start: 0x7f0000000000, End: 0x7f0000100000, Path: "/lib/libc.so.6"})
	fx := &stackFix{tramp: map[uint32]uint64{7: tr}, spaces: map[uint32]*proc.Space{7: sp}}
	// Calls in flight, outermost first: a from main, b from a, c from b.
	a := pend{start: 10, depth: 0, probe: 1, site: at("main", 0x20)}
	b := pend{start: 20, depth: 1, probe: 2, site: at("a", 0x10)}
	c := pend{start: 30, depth: 2, probe: 3, site: at("b", 0x30)}
	libc := uint64(0x7f0000001234)
	for _, tc := range []struct {
		name string
		user []uint64
		p    []pend
		want []uint64
		cut  bool
	}{
		{"fp chain", []uint64{at("c", 5), tr, tr, tr, libc}, []pend{a, b, c},
			[]uint64{at("c", 5), c.site, b.site, a.site, libc}, false},
		{"cfi stopped", []uint64{at("c", 5), tr}, []pend{c, a, b},
			[]uint64{at("c", 5), c.site, b.site, a.site}, false},
		{"stale call passed over", []uint64{at("b", 5), tr}, []pend{a, b, c},
			[]uint64{at("b", 5), b.site, a.site}, false},
		{"ip in the trampoline", []uint64{tr + 0xd}, []pend{a, b},
			[]uint64{tr + 0xd, b.site, a.site}, false},
		{"ip in the trampoline, its call ended", []uint64{tr + 0xd, tr, libc}, []pend{a},
			[]uint64{tr + 0xd, a.site, libc}, false},
		{"ip in the trampoline, its call in flight", []uint64{tr + 0xd, tr, libc}, []pend{a, b},
			[]uint64{tr + 0xd, b.site, a.site, libc}, false},
		{"untraced between", []uint64{at("c", 5), tr},
			[]pend{a, b, {start: 30, depth: 2, probe: 3, site: at("u", 0x8)}},
			[]uint64{at("c", 5), at("u", 0x8)}, true},
		{"cfi stopped, junk from the fp chain after", []uint64{at("c", 5), tr, 0x43350000c3c50112, libc}, []pend{a, b, c},
			[]uint64{at("c", 5), c.site, b.site, a.site}, false},
		{"cfi stopped, stale return addresses from the fp chain after", []uint64{at("c", 5), tr, at("u", 0x30), at("b", 0x44), libc}, []pend{a, b, c},
			[]uint64{at("c", 5), c.site, b.site, a.site}, false},
		{"a tail call's return chained to its caller's", []uint64{at("u", 5), tr}, []pend{a, b, {start: 30, depth: 2, probe: 3, site: tr}},
			[]uint64{at("u", 5), b.site, a.site}, false},
		{"cfi stopped in a tail call's callee", []uint64{at("u", 5), at("c", 0x20), tr}, []pend{a, {start: 20, depth: 1, probe: 2, site: tr}, c},
			[]uint64{at("u", 5), at("c", 0x20), c.site, a.site}, false},
		{"an abandoned call at a depth in flight", []uint64{at("c", 5), tr}, []pend{a, b, c, {start: 5, depth: 1, probe: 2, site: at("a", 0x40)}},
			[]uint64{at("c", 5), c.site, b.site, a.site}, false},
		{"no call left", []uint64{at("c", 5), tr, tr}, []pend{c},
			[]uint64{at("c", 5), c.site, tr}, false},
	} {
		got, cut := fx.fixStack(7, tc.user, tc.p, targets)
		if !slices.Equal(got, tc.want) || cut != tc.cut {
			t.Errorf("%s: got %x cut %v, want %x cut %v", tc.name, got, cut, tc.want, tc.cut)
		}
	}
	// With b sampled (#3), a call of b at depth 1 left out has no record:
	// its trampoline stays, the others get their own calls' return
	// addresses; where the unwinder stopped the stack ends at it.
	sampled := slices.Clone(targets)
	sampled[1].Every = 3
	c2 := pend{start: 30, depth: 2, probe: 3, site: at("b", 0x30)}
	for _, tc := range []struct {
		name string
		user []uint64
		want []uint64
		cut  bool
	}{
		{"fp chain", []uint64{at("c", 5), tr, tr, tr, libc}, []uint64{at("c", 5), c2.site, tr, a.site, libc}, false},
		{"cfi stopped", []uint64{at("c", 5), tr}, []uint64{at("c", 5), c2.site}, true},
	} {
		got, cut := fx.fixStack(7, tc.user, []pend{a, c2}, sampled)
		if !slices.Equal(got, tc.want) || cut != tc.cut {
			t.Errorf("a call left out, %s: got %x cut %v, want %x cut %v", tc.name, got, cut, tc.want, tc.cut)
		}
	}
}

// TestFixEntry gives samples in an entry probe's breakpoint their
// callers: before the kernel handled it (the IP one past the probe, a
// junk caller unwound; the call its thread starts next), while it
// emulates the probed push (the IP at the probe; the innermost call in
// flight), in the out-of-line single step, in the return trampoline's
// system call (the IP the return address, the stack pointer not yet
// moved); and keeps the unwound stack where it holds the right caller or
// the trampoline.
func TestFixEntry(t *testing.T) {
	const tr, exe = 0x7fffffffe000, "/bin/prog"
	code := map[string][2]uint64{"main": {0x1000, 0x1100}, "a": {0x1100, 0x1200}, "b": {0x1200, 0x1300}, "c": {0x1300, 0x1400}}
	targets := []Target{
		{Object: exe, Function: "a", Offset: code["a"][0], Code: code["a"]},
		{Object: exe, Function: "b", Offset: code["b"][0], Code: code["b"]},
		{Object: exe, Function: "c", Offset: code["c"][0], Code: code["c"]},
	}
	at := func(fn string, off uint64) uint64 { return 0x400000 + code[fn][0] + off }
	m := proc.Mapping{Start: 0x400000, End: 0x402000, Path: exe}
	libcMap := proc.Mapping{Start: 0x7f0000000000, End: 0x7f0000100000, Path: "/lib/libc.so.6"}
	sp := &proc.Space{}
	sp.Add(m)
	sp.Add(libcMap)
	fx := &stackFix{tramp: map[uint32]uint64{7: tr}, spaces: map[uint32]*proc.Space{7: sp},
		maps: map[uint32][]proc.Mapping{7: {m, libcMap}}}
	a := pend{start: 10, depth: 0, probe: 1, site: at("main", 0x20)}
	b := pend{start: 20, depth: 1, probe: 2, site: at("a", 0x10)}
	c := pend{start: 30, depth: 2, probe: 3, site: at("b", 0x30)}
	libc := uint64(0x7f0000001234)
	junk := uint64(0x7ffd4d267450)
	for _, tc := range []struct {
		name string
		user []uint64
		e    entryTrap
		p    []pend
		want []uint64
		cut  bool
	}{
		{"before the handling", []uint64{at("c", 1), junk, libc}, entryTrap{target: 3, ip: at("c", 0), after: true, next: c, found: true}, []pend{a, b},
			[]uint64{at("c", 0), c.site, b.site, a.site}, false},
		{"before the handling, the caller skipped", []uint64{at("c", 1), a.site}, entryTrap{target: 3, ip: at("c", 0), after: true, next: c, found: true}, []pend{a, b},
			[]uint64{at("c", 0), c.site, b.site, a.site}, false},
		{"the push emulated, the IP not yet moved", []uint64{at("c", 0), junk}, entryTrap{target: 3, ip: at("c", 0)}, []pend{a, b, c},
			[]uint64{at("c", 0), c.site, b.site, a.site}, false},
		{"after the handling, the return hijacked", []uint64{at("c", 1), tr, tr, tr, libc}, entryTrap{target: 3, ip: at("c", 0), after: true}, []pend{a, b, c},
			[]uint64{at("c", 1), c.site, b.site, a.site, libc}, false},
		{"the caller unwound right", []uint64{at("c", 1), c.site, tr, tr, libc}, entryTrap{target: 3, ip: at("c", 0), after: true, next: c, found: true}, []pend{a, b},
			[]uint64{at("c", 1), c.site, b.site, a.site, libc}, false},
		{"the unwound stack taken up again at the same return address", []uint64{at("a", 1), junk, a.site, libc}, entryTrap{target: 1, ip: at("a", 0), after: true, next: a, found: true}, nil,
			[]uint64{at("a", 0), a.site, libc}, false},
		{"no record of the call", []uint64{at("c", 1), junk}, entryTrap{target: 3, ip: at("c", 0), after: true}, []pend{a, b},
			[]uint64{at("c", 0)}, true},
		{"returning, the stack pointer not yet the caller's", []uint64{c.site, junk}, entryTrap{ret: true, ip: c.site}, []pend{a, b, c},
			[]uint64{c.site, b.site, a.site}, false},
		{"returning, the call recorded as ended", []uint64{c.site, tr, tr}, entryTrap{ret: true, ip: c.site}, []pend{a, b},
			[]uint64{c.site, b.site, a.site}, false},
		{"returning into an untraced function, its caller unwound", []uint64{a.site, libc}, entryTrap{ret: true, ip: a.site}, []pend{a},
			[]uint64{a.site, libc}, false},
		{"returning into an untraced function, nothing unwound", []uint64{a.site, tr}, entryTrap{ret: true, ip: a.site}, []pend{a},
			[]uint64{a.site}, true},
		{"the probed instruction run out of line", []uint64{tr + 0x80}, entryTrap{xol: true, ip: tr + 0x80}, []pend{a, b, c},
			[]uint64{at("c", 0), c.site, b.site, a.site}, false},
		{"before the handling, calls a longjmp went past still in flight", []uint64{at("c", 1), junk}, entryTrap{target: 3, ip: at("c", 0), after: true, next: pend{start: 40, depth: 1, probe: 3, site: at("a", 0x30)}, found: true}, []pend{a, b, c},
			[]uint64{at("c", 0), at("a", 0x30), a.site}, false},
	} {
		e := tc.e
		got, cut := fx.fixEntry(7, tc.user, &e, tc.p, targets)
		if !slices.Equal(got, tc.want) || cut != tc.cut {
			t.Errorf("%s: got %x cut %v, want %x cut %v", tc.name, got, cut, tc.want, tc.cut)
		}
	}
	// With a sampled (#3), a recursive call of a at depth 1 left out:
	// the call being entered (depth 2, from it) is innermost at its own
	// depth, and the stack ends at the call left out, whose return
	// address is not known; it is not taken for the outer a's frame.
	sampled := slices.Clone(targets)
	sampled[0].Every = 3
	e := entryTrap{target: 3, ip: at("c", 0), after: true, next: pend{start: 40, depth: 2, probe: 3, site: at("a", 0x10)}, found: true}
	got, cut := fx.fixEntry(7, []uint64{at("c", 1), junk}, &e, []pend{a}, sampled)
	if want := []uint64{at("c", 0), at("a", 0x10)}; !slices.Equal(got, want) || !cut {
		t.Errorf("before the handling, a call left out below: got %x cut %v, want %x cut", got, cut, want)
	}
}

// TestNextCalls takes the first call a thread starts after an entry-trap
// sample for the call being entered only when no call returned, and no
// point was reached, on the thread in between (then the call entered was
// one sampling left out); a call its entry found abandoned does not
// count (those are not in ended).
func TestNextCalls(t *testing.T) {
	call := pend{start: 250, depth: 0, probe: 1, site: 0x401020}
	for _, tc := range []struct {
		name  string
		first []*pend
		ended []uint64
		found bool
	}{
		{"nothing in between", []*pend{nil, &call}, nil, true},
		{"a return after it started", []*pend{nil, &call}, []uint64{0, 300}, true},
		{"a return before it started", []*pend{nil, &call}, []uint64{0, 180}, false},
		{"a return before the next sample", []*pend{nil, &call}, []uint64{150, 0}, false},
		{"another function's call next", []*pend{{start: 150, probe: 2}, &call}, nil, false},
	} {
		fx := &stackFix{next: map[uint32]*threadSamples{9: {times: []uint64{100, 200}, index: []int{4, 5}}},
			entry: map[int]*entryTrap{4: {target: 1}}}
		ended := map[uint32][]uint64{}
		if tc.ended != nil {
			ended[9] = tc.ended
		}
		fx.nextCalls(map[uint32][]*pend{9: tc.first}, ended)
		if e := fx.entry[4]; e.found != tc.found || tc.found && e.next != call {
			t.Errorf("%s: found %v (%+v), want %v", tc.name, e.found, e.next, tc.found)
		}
	}
}
