// gospin is the Go target: two goroutines spin in distinct functions, the
// second under a function with a large frame.
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
)

var sink uint64

//go:noinline
func spinAlpha(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += uint64(i) ^ (s >> 3)
	}
	return s
}

//go:noinline
func spinBeta(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s ^= uint64(i) * 3
	}
	return s
}

// bigFrame calls spinBeta from a 4 KiB frame: unwinding a small stack copy
// stops in it, and its frame pointer (Go keeps them; its CFA is rsp-based)
// leads on to its callers.
//
//go:noinline
func bigFrame(n int) uint64 {
	var buf [4096]byte
	buf[n%len(buf)] = byte(n)
	return spinBeta(n) + uint64(buf[(n/2)%len(buf)])
}

func main() {
	n := 400000000
	if len(os.Args) > 1 {
		if v, err := strconv.Atoi(os.Args[1]); err == nil {
			n = v
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); sink += spinAlpha(n) }()
	go func() { defer wg.Done(); sink += bigFrame(n) }()
	wg.Wait()
	fmt.Fprintln(os.Stderr, sink%2)
}
