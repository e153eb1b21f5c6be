// gotrace calls functions a tracer can count: it prints how many times it
// called each ("count NAME N") and each args3 call's arguments ("args A B C").
// Usage: gotrace FIB_N LEAF_CALLS GOROUTINES ARGS_CALLS
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
)

var calls struct {
	sync.Mutex
	fib, leaf, args int
}

//go:noinline
func fib(n int) int {
	calls.Lock()
	calls.fib++
	calls.Unlock()
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

var sink int

//go:noinline
func leaf(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i ^ (s >> 3)
	}
	// A deep stack now and then makes the runtime grow (move) the stack.
	if n%7 == 0 {
		var buf [4096]byte
		buf[n%4096] = byte(s)
		s += int(buf[(n+1)%4096])
	}
	return s
}

//go:noinline
func args3(a int, b int32, c uint32) int {
	return a + int(b) + int(c)
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: gotrace FIB_N LEAF_CALLS GOROUTINES ARGS_CALLS")
		os.Exit(2)
	}
	fibN, _ := strconv.Atoi(os.Args[1])
	leafs, _ := strconv.Atoi(os.Args[2])
	gs, _ := strconv.Atoi(os.Args[3])
	argc, _ := strconv.Atoi(os.Args[4])
	sink = fib(fibN)
	var wg sync.WaitGroup
	for g := 0; g < gs; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < leafs; i++ {
				sink += leaf(i % 100)
			}
			calls.Lock()
			calls.leaf += leafs
			calls.Unlock()
		}()
	}
	wg.Wait()
	for i := 0; i < argc; i++ {
		a, b, c := 1000*i-7, int32(-i), uint32(3000000000+i)
		fmt.Printf("args %d %d %d\n", a, b, c)
		sink += args3(a, b, c)
	}
	calls.args = argc
	fmt.Printf("count fib %d\ncount leaf %d\ncount args3 %d\n", calls.fib, calls.leaf, calls.args)
}
