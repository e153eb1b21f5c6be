// gorunq is runq.c in Go: more goroutines than CPUs, each locked to an
// OS thread of its own, spinning in work, sleeping 100 µs (time.Sleep:
// the goroutine parks, its locked thread sleeps in a futex until another
// thread of the runtime hands the goroutine back to it) and passing a
// token around a ring over channels every few rounds. Its rounds done,
// each goroutine blocks for good on its thread, and main prints, for
// each, its thread's id and the kernel's schedstat of it
// (/proc/self/task/TID/schedstat: time on the CPU, time waiting on a run
// queue, times run): "tid TID CPU_NS RUN_DELAY_NS PCOUNT", after "at NS",
// the time it read them (CLOCK_MONOTONIC).
// Usage: gorunq GOROUTINES ROUNDS
package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
	_ "unsafe" // go:linkname
)

// nanotime is the runtime's CLOCK_MONOTONIC reading.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// work spins for d of the wall clock.
//
//go:noinline
func work(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gorunq GOROUTINES ROUNDS")
		os.Exit(2)
	}
	n, err1 := strconv.Atoi(os.Args[1])
	rounds, err2 := strconv.Atoi(os.Args[2])
	if err1 != nil || err2 != nil || n < 1 || n > 64 || rounds < 1 {
		fmt.Fprintln(os.Stderr, "gorunq: 1 to 64 goroutines, at least 1 round")
		os.Exit(2)
	}
	// main keeps the process's first thread: its schedstat counts the
	// time before the program began (its exec), which nothing recorded.
	runtime.LockOSThread()
	ring := make([]chan struct{}, n)
	for i := range ring {
		ring[i] = make(chan struct{}, 1)
	}
	ring[0] <- struct{}{}
	out := make(chan int)
	for i := range n {
		go func() {
			runtime.LockOSThread()
			for r := range rounds {
				work(300 * time.Microsecond)
				time.Sleep(100 * time.Microsecond)
				if r%4 == 0 {
					<-ring[i]
					ring[(i+1)%n] <- struct{}{}
				}
			}
			out <- syscall.Gettid()
			select {} // keep the thread, locked and asleep, until the process exits
		}()
	}
	tids := make([]int, n)
	for i := range tids {
		tids[i] = <-out
	}
	// The time of the account (CLOCK_MONOTONIC, the recordings' clock):
	// the threads' exit after it is not in their schedstat.
	fmt.Printf("at %d\n", nanotime())
	for _, tid := range tids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/schedstat", tid))
		f := bytes.Fields(b)
		if err != nil || len(f) != 3 {
			fmt.Fprintln(os.Stderr, "gorunq: schedstat:", err)
			os.Exit(1)
		}
		fmt.Printf("tid %d %s %s %s\n", tid, f[0], f[1], f[2])
	}
}
