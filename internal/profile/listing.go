package profile

import (
	"cmp"
	"regexp"
	"slices"
)

// Listing is where the samples of one function fell, line by line: what
// `report --list` prints next to the source, as pprof -list and perf
// annotate do.
type Listing struct {
	Function string // Frame.Name of the function
	Object   string // basename of its object
	Path     string // its object as recorded (Frame.Object)
	Self     int    // samples whose innermost frame is in the function
	Total    int    // samples with the function anywhere on the stack (once per sample)
	// Lines are the source lines where the function's frames were, in
	// file then line order. A line's Total counts a sample once even when
	// recursion puts the line on its stack twice; its Self counts the
	// samples whose innermost frame is at the line. A call site of an
	// inlined function has Total only: the inlined function's own frame is
	// innermost.
	Lines []LineCount
	// Addresses, for frames without line information (an object without
	// DWARF), count the samples at each address, as file offsets in Object
	// (addresses for kernel frames): the innermost frame's own address for
	// Self; for a caller, the return address − 1, which lies in its call
	// instruction.
	Addresses []AddrCount
	// Offsets count the samples at each address of all the function's
	// frames, with or without lines, as Addresses does (what an
	// instruction-level annotation needs); not set for kernel frames.
	Offsets []AddrCount
}

// LineCount is the samples at one source line of a Listing.
type LineCount struct {
	File        string
	Line        int
	Self, Total int
}

// AddrCount is the samples at one address of a Listing.
type AddrCount struct {
	Offset      uint64
	Self, Total int
}

// Listings returns a Listing for each function whose name (Frame.Name)
// matches re and that has samples, by self samples then total samples,
// most first, as a flat profile is ordered. Functions of
// the same name in different objects are listed apart.
func (p *Profile) Listings(re *regexp.Regexp) []Listing {
	type fnKey struct{ name, object string }
	type lineKey struct {
		file string
		line int
	}
	type acc struct {
		Listing
		lines map[lineKey]*LineCount
		addrs map[uint64]*AddrCount
		offs  map[uint64]*AddrCount
	}
	// Which frames belong to a listed function, decided once per frame.
	member := make([]int8, len(p.Frames)) // 0 unknown, 1 listed, -1 not
	listed := func(fi int32) bool {
		if fi < 0 || int(fi) >= len(member) {
			return false
		}
		if member[fi] == 0 {
			member[fi] = -1
			if re.MatchString(p.Frames[fi].Name()) {
				member[fi] = 1
			}
		}
		return member[fi] == 1
	}
	perStack := map[int32]int{}
	for _, s := range p.Samples {
		perStack[s.Stack] += s.N()
	}
	accs := map[fnKey]*acc{}
	seen := map[seenKey]bool{}
	for st, n := range perStack {
		clear(seen)
		for i, fi := range p.StackAt(st) {
			if !listed(fi) {
				continue
			}
			fr := p.Frames[fi]
			k := fnKey{fr.Name(), fr.ObjectName()}
			a := accs[k]
			if a == nil {
				a = &acc{Listing: Listing{Function: k.name, Object: k.object, Path: fr.Object},
					lines: map[lineKey]*LineCount{}, addrs: map[uint64]*AddrCount{}, offs: map[uint64]*AddrCount{}}
				accs[k] = a
			}
			self := i == 0
			if self {
				a.Self += n
			}
			if !seen[seenKey{fn: k}] {
				seen[seenKey{fn: k}] = true
				a.Total += n
			}
			if !fr.Kernel {
				count(a.offs, fr.Offset, self, n, seen, seenKey{fn: k, addr: fr.Offset + 1, off: true})
			}
			if fr.File != "" && fr.Line > 0 {
				lk := lineKey{fr.File, fr.Line}
				lc := a.lines[lk]
				if lc == nil {
					lc = &LineCount{File: fr.File, Line: fr.Line}
					a.lines[lk] = lc
				}
				if self {
					lc.Self += n
				}
				if sk := (seenKey{fn: k, line: lk}); !seen[sk] {
					seen[sk] = true
					lc.Total += n
				}
				continue
			}
			// addr+1 keeps address 0 apart from "no address" in the key.
			count(a.addrs, fr.Offset, self, n, seen, seenKey{fn: k, addr: fr.Offset + 1})
		}
	}
	out := make([]Listing, 0, len(accs))
	for _, a := range accs {
		l := a.Listing
		for _, lc := range a.lines {
			l.Lines = append(l.Lines, *lc)
		}
		slices.SortFunc(l.Lines, func(x, y LineCount) int {
			return cmp.Or(cmp.Compare(x.File, y.File), cmp.Compare(x.Line, y.Line))
		})
		l.Addresses, l.Offsets = sortedAddrs(a.addrs), sortedAddrs(a.offs)
		out = append(out, l)
	}
	slices.SortFunc(out, func(x, y Listing) int {
		return cmp.Or(cmp.Compare(y.Self, x.Self), cmp.Compare(y.Total, x.Total),
			cmp.Compare(x.Function, y.Function), cmp.Compare(x.Object, y.Object))
	})
	return out
}

// seenKey marks what a sample has already been counted for: a function, a
// line of it, or an address of it (among Addresses, or among Offsets).
type seenKey struct {
	fn   struct{ name, object string }
	line struct {
		file string
		line int
	}
	addr uint64
	off  bool
}

// count adds a sample's n to the address off of m: to Self when the frame is
// innermost, to Total once per sample (seen, under key k).
func count(m map[uint64]*AddrCount, off uint64, self bool, n int, seen map[seenKey]bool, k seenKey) {
	ac := m[off]
	if ac == nil {
		ac = &AddrCount{Offset: off}
		m[off] = ac
	}
	if self {
		ac.Self += n
	}
	if !seen[k] {
		seen[k] = true
		ac.Total += n
	}
}

func sortedAddrs(m map[uint64]*AddrCount) []AddrCount {
	out := make([]AddrCount, 0, len(m))
	for _, ac := range m {
		out = append(out, *ac)
	}
	slices.SortFunc(out, func(x, y AddrCount) int { return cmp.Compare(x.Offset, y.Offset) })
	return out
}
