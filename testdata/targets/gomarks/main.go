// gomarks marks its requests with the interval package: the main
// goroutine starts each request and hands it to W workers over a
// channel; a worker runs stepA and stepB and ends it. stepB sleeps 10 ms
// more in one request of four. It prints each request's latency between
// its marks ("lat ID NS") and stepB's true share of the latency's
// variance ("share stepB X").
// Usage: gomarks N W
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/culprit-dev/culprit/interval"
)

type req struct {
	id         uint64
	heavy      bool
	start, end time.Time
	b          time.Duration
}

func spin(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}

//go:noinline
func stepA(r *req) { spin(10 * time.Microsecond) }

//go:noinline
func stepB(r *req) {
	t0 := time.Now()
	spin(10 * time.Microsecond)
	if r.heavy {
		time.Sleep(10 * time.Millisecond)
	}
	r.b = time.Since(t0)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gomarks N W")
		os.Exit(2)
	}
	n, err1 := strconv.Atoi(os.Args[1])
	w, err2 := strconv.Atoi(os.Args[2])
	if err1 != nil || err2 != nil || n < 2 || w < 1 {
		fmt.Fprintln(os.Stderr, "gomarks: N must be at least 2, W at least 1")
		os.Exit(2)
	}
	reqs := make([]req, n)
	x := uint64(88172645463325252)
	for i := range reqs {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		reqs[i] = req{id: uint64(1000 + i), heavy: x%4 == 0}
	}
	ch := make(chan *req)
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range ch {
				stepA(r)
				stepB(r)
				r.end = time.Now()
				interval.End(r.id)
			}
		}()
	}
	for i := range reqs {
		r := &reqs[i]
		interval.Start(r.id)
		r.start = time.Now()
		ch <- r
		time.Sleep(time.Millisecond)
	}
	close(ch)
	wg.Wait()
	var ml, mb float64
	for _, r := range reqs {
		fmt.Printf("lat %d %d\n", r.id, r.end.Sub(r.start).Nanoseconds())
		ml += float64(r.end.Sub(r.start))
		mb += float64(r.b)
	}
	ml /= float64(n)
	mb /= float64(n)
	var vl, vb float64
	for _, r := range reqs {
		l, b := float64(r.end.Sub(r.start))-ml, float64(r.b)-mb
		vl += l * l
		vb += b * b
	}
	fmt.Printf("share stepB %.4f\n", vb/vl)
}
