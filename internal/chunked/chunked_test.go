package chunked

import (
	"slices"
	"testing"
)

func TestList(t *testing.T) {
	for _, n := range []int{0, 1, chunkLen - 1, chunkLen, chunkLen + 1, 5*chunkLen + 7} {
		var l List[int]
		want := make([]int, 0, n)
		for i := range n {
			l.Add(i * 3)
			want = append(want, i*3)
		}
		if l.Len() != n {
			t.Fatalf("Len = %d, want %d", l.Len(), n)
		}
		got := l.Flat()
		if !slices.Equal(got, want) || (n == 0) != (got == nil) {
			t.Fatalf("n %d: Flat gave %d elements (nil %v)", n, len(got), got == nil)
		}
		if l.Len() != 0 || l.Flat() != nil {
			t.Fatalf("n %d: not emptied by Flat", n)
		}
	}
}

// TestReserve checks that a reservation the elements fill is returned
// without a copy, and that fewer or more elements than reserved read the
// same as without one.
func TestReserve(t *testing.T) {
	const r = 3 * chunkLen
	for _, n := range []int{0, 1, r / 2, r - 1, r, r + 1, r + 2*chunkLen + 5} {
		var l List[int]
		l.Reserve(r)
		var first *int
		want := make([]int, 0, n)
		for i := range n {
			l.Add(i*7 + 1)
			if i == 0 {
				first = &l.chunks[0][0]
			}
			want = append(want, i*7+1)
		}
		got := l.Flat()
		if !slices.Equal(got, want) || (n == 0) != (got == nil) {
			t.Fatalf("n %d: Flat gave %d elements (nil %v)", n, len(got), got == nil)
		}
		if cap(got) != len(got) {
			t.Errorf("n %d: Flat's slice has room %d past its %d elements", n, cap(got)-len(got), len(got))
		}
		copied := n > 0 && &got[0] != first
		if wantCopy := n > 0 && (n > r || 2*n < r); copied != wantCopy {
			t.Errorf("n %d of %d reserved: copied %v, want %v", n, r, copied, wantCopy)
		}
		if l.Len() != 0 || l.Flat() != nil {
			t.Fatalf("n %d: not emptied by Flat", n)
		}
	}
	var l List[int] // a reservation of a chunk or less is not taken
	l.Reserve(chunkLen)
	if l.chunks != nil {
		t.Errorf("Reserve(chunkLen) made a chunk")
	}
}
