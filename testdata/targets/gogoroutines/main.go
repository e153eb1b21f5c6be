// gogoroutines serves N requests on W goroutines, each calling handle,
// which calls parse, slowStep and respond. slowStep sleeps 4 ms in one
// request of four and 200 µs in the others, so goroutines park in the
// middle of handle and resume on whichever thread the scheduler gives
// them. The program times each request and slowStep itself, over the
// spans the probes time (from just before the call to the function's last
// statement), and prints "req ID HANDLE_NS SLOW_NS" for each request.
// Usage: gogoroutines N W
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

type req struct {
	id               int
	t0, handle       time.Time
	slow0            time.Time
	handleNS, slowNS time.Duration
}

func spin(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}

//go:noinline
func parse(r *req) { spin(20 * time.Microsecond) }

//go:noinline
func slowStep(r *req) {
	if r.id%4 == 0 {
		time.Sleep(4 * time.Millisecond)
	} else {
		time.Sleep(200 * time.Microsecond)
	}
	r.slowNS = time.Since(r.slow0)
}

//go:noinline
func respond(r *req) { spin(20 * time.Microsecond) }

//go:noinline
func handle(r *req) {
	parse(r)
	r.slow0 = time.Now()
	slowStep(r)
	respond(r)
	r.handleNS = time.Since(r.t0)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gogoroutines N W")
		os.Exit(2)
	}
	n, err1 := strconv.Atoi(os.Args[1])
	w, err2 := strconv.Atoi(os.Args[2])
	if err1 != nil || err2 != nil || n < 2 || w < 1 {
		fmt.Fprintln(os.Stderr, "gogoroutines: N must be at least 2, W at least 1")
		os.Exit(2)
	}
	reqs := make([]req, n)
	var wg sync.WaitGroup
	for g := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += w {
				r := &reqs[i]
				r.id = i
				r.t0 = time.Now()
				handle(r)
			}
		}()
	}
	wg.Wait()
	for i := range reqs {
		fmt.Printf("req %d %d %d\n", reqs[i].id, reqs[i].handleNS.Nanoseconds(), reqs[i].slowNS.Nanoseconds())
	}
}
