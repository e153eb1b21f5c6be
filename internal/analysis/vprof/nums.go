package vprof

import "math"

// nums is a series of numbers in the order they were added, stored in the
// narrowest of 1-, 2- and 4-byte integers that holds every number so far,
// else as float64: most variables hold small integers, and their deltas and
// run lengths are smaller still, so a series takes 1 to 4 bytes a number
// instead of 8. Every number reads back exactly (−0, ±Inf and fractions
// take the float64 form).
type nums struct {
	i8  []int8
	i16 []int16
	i32 []int32
	f   []float64
	w   uint8 // bytes a number: 0 (none yet), 1, 2, 4; 8 float64
}

// numsOf returns xs as a series.
func numsOf(xs []float64) nums {
	var s nums
	s.grow(len(xs))
	for _, x := range xs {
		s.add(x)
	}
	return s
}

// width is the narrowest storage of x.
func width(x float64) uint8 {
	switch {
	case x != math.Trunc(x) || x == 0 && math.Signbit(x): // fractions, NaN, ±Inf, −0
		return 8
	case x >= math.MinInt8 && x <= math.MaxInt8:
		return 1
	case x >= math.MinInt16 && x <= math.MaxInt16:
		return 2
	case x >= math.MinInt32 && x <= math.MaxInt32:
		return 4
	}
	return 8
}

// grow makes room for n more numbers of the current width (1 byte each
// before the first).
func (s *nums) grow(n int) {
	switch s.w {
	case 0, 1:
		if cap(s.i8)-len(s.i8) < n {
			s.i8 = append(make([]int8, 0, len(s.i8)+n), s.i8...)
		}
	case 2:
		if cap(s.i16)-len(s.i16) < n {
			s.i16 = append(make([]int16, 0, len(s.i16)+n), s.i16...)
		}
	case 4:
		if cap(s.i32)-len(s.i32) < n {
			s.i32 = append(make([]int32, 0, len(s.i32)+n), s.i32...)
		}
	default:
		if cap(s.f)-len(s.f) < n {
			s.f = append(make([]float64, 0, len(s.f)+n), s.f...)
		}
	}
}

// widen moves the numbers to width w, keeping the room made for them.
func (s *nums) widen(w uint8) {
	n, c := s.len(), s.capacity()
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = s.at(i)
	}
	s.i8, s.i16, s.i32, s.f = nil, nil, nil, nil
	s.w = w
	switch w {
	case 2:
		s.i16 = make([]int16, n, c)
		for i, x := range xs {
			s.i16[i] = int16(x)
		}
	case 4:
		s.i32 = make([]int32, n, c)
		for i, x := range xs {
			s.i32[i] = int32(x)
		}
	default:
		s.f = make([]float64, n, c)
		copy(s.f, xs)
	}
}

func (s *nums) capacity() int {
	switch s.w {
	case 0, 1:
		return cap(s.i8)
	case 2:
		return cap(s.i16)
	case 4:
		return cap(s.i32)
	}
	return cap(s.f)
}

// add appends x.
func (s *nums) add(x float64) {
	if s.w == 0 {
		s.w = 1
	}
	if w := width(x); w > s.w {
		s.widen(w)
	}
	switch s.w {
	case 1:
		s.i8 = append(s.i8, int8(x))
	case 2:
		s.i16 = append(s.i16, int16(x))
	case 4:
		s.i32 = append(s.i32, int32(x))
	default:
		s.f = append(s.f, x)
	}
}

// len is the number of numbers.
func (s *nums) len() int {
	switch s.w {
	case 0, 1:
		return len(s.i8)
	case 2:
		return len(s.i16)
	case 4:
		return len(s.i32)
	}
	return len(s.f)
}

// at is the i-th number.
func (s *nums) at(i int) float64 {
	switch s.w {
	case 0, 1:
		return float64(s.i8[i])
	case 2:
		return float64(s.i16[i])
	case 4:
		return float64(s.i32[i])
	}
	return s.f[i]
}

// floats returns the numbers as float64, in order: a new slice, except in
// the float64 form, where it is the series' own (not to be modified).
func (s *nums) floats() []float64 {
	if s.w == 8 {
		return s.f
	}
	xs := make([]float64, s.len())
	for i := range xs {
		xs[i] = s.at(i)
	}
	return xs
}

// appendTo appends the numbers to xs.
func (s *nums) appendTo(xs []float64) []float64 {
	if s.w == 8 {
		return append(xs, s.f...)
	}
	for i, n := 0, s.len(); i < n; i++ {
		xs = append(xs, s.at(i))
	}
	return xs
}
