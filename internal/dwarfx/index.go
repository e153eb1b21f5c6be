package dwarfx

import "sort"

// ivIndex maps PCs to items through their address ranges: intervals sorted
// by start, with a running maximum of ends so that find, a binary search
// followed by a backward walk over intervals that may still cover the PC,
// is O(log n) when intervals do not nest deeply (they do not: functions of
// a unit, units of an object and blocks of a scope are disjoint).
type ivIndex struct {
	iv    []interval
	maxHi []uint64
}

type interval struct {
	lo, hi uint64
	i      int32 // item
}

func (x *ivIndex) add(lo, hi uint64, i int) {
	if hi > lo {
		x.iv = append(x.iv, interval{lo, hi, int32(i)})
	}
}

func (x *ivIndex) build() {
	sort.SliceStable(x.iv, func(a, b int) bool { return x.iv[a].lo < x.iv[b].lo })
	x.maxHi = make([]uint64, len(x.iv))
	var m uint64
	for k, v := range x.iv {
		m = max(m, v.hi)
		x.maxHi[k] = m
	}
}

// find returns the item of the interval containing pc with the greatest
// start, or -1.
func (x *ivIndex) find(pc uint64) int {
	for j := x.search(pc) - 1; j >= 0 && x.maxHi[j] > pc; j-- {
		if x.iv[j].hi > pc {
			return int(x.iv[j].i)
		}
	}
	return -1
}

// search returns the index of the first interval starting after pc.
func (x *ivIndex) search(pc uint64) int {
	iv := x.iv
	lo, hi := 0, len(iv)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if iv[m].lo <= pc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// each calls f with the items of the intervals containing pc, greatest
// start first, until f returns false.
func (x *ivIndex) each(pc uint64, f func(int) bool) {
	for j := x.search(pc) - 1; j >= 0 && x.maxHi[j] > pc; j-- {
		if x.iv[j].hi > pc && !f(int(x.iv[j].i)) {
			return
		}
	}
}
