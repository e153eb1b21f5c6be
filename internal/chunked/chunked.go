// Package chunked is a list that grows in fixed chunks: for the loader's
// samples and values and latency's instances, millions of records appended
// one at a time. A slice grown by append is copied at every growth, and the
// old copies wait for the collector: four times the list allocated, up to
// twice its size left behind. A chunked list is copied once, into one slice
// of the final length (Flat). When the length is known ahead (a recording's
// End record counts its samples), Reserve makes the first chunk that long,
// and Flat returns it without a copy. The standard library has no such
// type, and it is a few lines.
package chunked

import "runtime"

// chunkLen is the number of elements in a chunk.
const chunkLen = 1 << 15

// List is a list of T in chunks. The zero value is an empty list.
type List[T any] struct {
	chunks [][]T
	n      int
}

// Reserve makes room for n elements in one piece, when l is empty and n is
// more than a chunk: added up to n, they are held where Flat returns them.
// Past n, chunks follow as without it.
func (l *List[T]) Reserve(n int) {
	if l.n == 0 && n > chunkLen {
		l.chunks = [][]T{make([]T, 0, n)}
	}
}

// Add appends v.
func (l *List[T]) Add(v T) {
	if k := len(l.chunks); k == 0 || len(l.chunks[k-1]) == cap(l.chunks[k-1]) {
		l.chunks = append(l.chunks, make([]T, 0, chunkLen))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, v)
	l.n++
}

// Len is the number of elements added.
func (l *List[T]) Len() int { return l.n }

// Flat returns the elements in one slice (nil when there are none) and
// empties l. When the list took several chunks, they are collected at once:
// their memory then serves what is allocated next, rather than the heap
// growing to twice this peak before the collector's next turn.
func (l *List[T]) Flat() []T {
	if l.n == 0 {
		*l = List[T]{}
		return nil
	}
	// One piece (reserved) that the elements fill at least half of is
	// returned as it is; a reservation mostly unused is copied, so that
	// its room is not held.
	if c := l.chunks[0]; len(l.chunks) == 1 && len(c) > chunkLen && 2*len(c) >= cap(c) {
		*l = List[T]{}
		return c[:len(c):len(c)]
	}
	out := make([]T, 0, l.n)
	for i, c := range l.chunks {
		out = append(out, c...)
		l.chunks[i] = nil
	}
	large := len(l.chunks) >= 4
	*l = List[T]{}
	if large {
		runtime.GC()
	}
	return out
}
