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
