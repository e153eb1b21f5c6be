// gospin is the Go target: two goroutines spin in distinct functions.
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
	go func() { defer wg.Done(); sink += spinBeta(n) }()
	wg.Wait()
	fmt.Fprintln(os.Stderr, sink%2)
}
