package unwind

import (
	"slices"
	"testing"
)

// Symbolic addresses for crafted chains.
const (
	worker    = 0x1000 // sampled IP in a frameless leaf
	dispatch2 = 0x2010 // return address into dispatch_2
	mainY     = 0x3020 // return address into main
	libc1     = 0x7f00_0000_1000
	libc2     = 0x7f00_0000_2000
	start     = 0x4000
	junk      = 0x7ffd_0000_0000
)

func TestMerge(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfi, fp  []uint64
		complete bool
		want     []uint64
	}{
		{
			name:     "frameless leaf, CFI complete",
			cfi:      []uint64{worker, dispatch2, mainY, libc1, libc2, start},
			fp:       []uint64{worker, mainY, libc1},
			complete: true,
			want:     []uint64{worker, dispatch2, mainY, libc1, libc2, start},
		},
		{
			name: "frameless leaf, CFI incomplete: splice at main",
			cfi:  []uint64{worker, dispatch2, mainY, libc1},
			fp:   []uint64{worker, mainY, libc1, libc2, start},
			want: []uint64{worker, dispatch2, mainY, libc1, libc2, start},
		},
		{
			name: "CFI stops before any fp frame (short copy)",
			cfi:  []uint64{worker, dispatch2},
			fp:   []uint64{worker, mainY, libc1, libc2},
			want: []uint64{worker, dispatch2, mainY, libc1, libc2},
		},
		{
			name: "CFI went past the last common frame: keep its frames",
			cfi:  []uint64{worker, dispatch2, mainY, libc1},
			fp:   []uint64{worker, mainY, start},
			want: []uint64{worker, dispatch2, mainY, libc1, start},
		},
		{
			name: "fp[1] junk from a non-fp leaf",
			cfi:  []uint64{worker, dispatch2, mainY},
			fp:   []uint64{worker, junk, mainY, libc1, libc2},
			want: []uint64{worker, dispatch2, mainY, libc1, libc2},
		},
		{
			name:     "fp chain is all junk and CFI is complete",
			cfi:      []uint64{worker, dispatch2, mainY, start},
			fp:       []uint64{worker, junk},
			complete: true,
			want:     []uint64{worker, dispatch2, mainY, start},
		},
		{
			name: "recursion pairs equal addresses in order",
			cfi:  []uint64{worker, 0x5000, 0x5000, 0x5000},
			fp:   []uint64{worker, 0x5000, 0x5000, 0x5000, 0x5000, mainY},
			want: []uint64{worker, 0x5000, 0x5000, 0x5000, 0x5000, mainY},
		},
		{
			name: "cfi short: only the IP",
			cfi:  []uint64{worker},
			fp:   []uint64{worker, mainY, libc1},
			want: []uint64{worker, mainY, libc1},
		},
		{
			name: "cfi empty",
			cfi:  nil,
			fp:   []uint64{worker, mainY},
			want: []uint64{worker, mainY},
		},
		{
			name: "fp empty",
			cfi:  []uint64{worker, dispatch2},
			fp:   nil,
			want: []uint64{worker, dispatch2},
		},
		{
			name: "both empty",
			want: nil,
		},
		{
			name: "fp of a different state: no splice",
			cfi:  []uint64{worker, dispatch2},
			fp:   []uint64{0x9999, libc1},
			want: []uint64{worker, dispatch2},
		},
		{
			name: "fp identical to cfi",
			cfi:  []uint64{worker, dispatch2, mainY},
			fp:   []uint64{worker, dispatch2, mainY},
			want: []uint64{worker, dispatch2, mainY},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfi, fp := slices.Clone(tc.cfi), slices.Clone(tc.fp)
			got := Merge(tc.cfi, tc.fp, tc.complete)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Merge(%x, %x, %v) = %x, want %x", tc.cfi, tc.fp, tc.complete, got, tc.want)
			}
			if !slices.Equal(cfi, tc.cfi) || !slices.Equal(fp, tc.fp) {
				t.Error("Merge modified its inputs")
			}
			if len(got) > 0 && len(tc.cfi) > 0 && &got[0] == &tc.cfi[0] {
				t.Error("Merge returned an alias of cfi")
			}
		})
	}
}
