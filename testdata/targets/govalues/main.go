// govalues is the Go target of value sampling: work's parameter n arrives
// in a register (Go's register ABI), its loop counters i and j live in
// registers that Go's location lists cover only at the loops' headers, and
// limit and cfg are globals, cfg a struct. It prints the globals and the
// values of n it used: "limit rounds scale n".
//
// Usage: govalues N ROUNDS LIMIT (round r calls work(N+r)).
package main

import (
	"fmt"
	"os"
	"strconv"
)

var limit = 1

var cfg struct {
	rounds int
	scale  int64
}

var sink uint64

//go:noinline
func work(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		for j := 0; j < limit; j++ {
			s += uint64(i*j) ^ (s >> 3)
		}
	}
	return s
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: govalues N ROUNDS LIMIT")
		os.Exit(2)
	}
	n, err1 := strconv.Atoi(os.Args[1])
	rounds, err2 := strconv.Atoi(os.Args[2])
	l, err3 := strconv.Atoi(os.Args[3])
	if err1 != nil || err2 != nil || err3 != nil || n < 1 || rounds < 1 || l < 1 {
		fmt.Fprintln(os.Stderr, "govalues: N, ROUNDS and LIMIT are positive integers")
		os.Exit(2)
	}
	limit = l
	cfg.rounds = rounds
	cfg.scale = int64(l) * 7
	for r := 0; r < rounds; r++ {
		sink += work(n + r)
	}
	fmt.Println(limit, cfg.rounds, cfg.scale, n)
	fmt.Fprintln(os.Stderr, sink%2)
}
