// gohandoff is a net/http server whose handler hands each request to a
// single worker goroutine over a channel and waits for its answer on
// another (in await): the latency of a request is mostly the worker's,
// on another goroutine. It listens on loopback and sends itself N requests, one
// after another, from a client in the same process. The worker's work
// spins 2 ms for one request in four and 100 µs for the others. The
// handler times each request and the worker each job, over the spans the
// probes time, and the program prints "req ID HANDLE_NS WORK_NS" for
// each and "worker goroutine GOID", the worker's id as the runtime's
// stack dump names it.
// Usage: gohandoff N
package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"time"
)

type job struct {
	id     int
	t0     time.Time
	done   chan struct{}
	workNS time.Duration
}

var jobs = make(chan *job)

func spin(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}

//go:noinline
func work(j *job) {
	t0 := time.Now()
	if j.id%4 == 0 {
		spin(2 * time.Millisecond)
	} else {
		spin(100 * time.Microsecond)
	}
	j.workNS = time.Since(t0)
}

// worker serves the jobs one at a time.
func worker() {
	fmt.Printf("worker goroutine %d\n", goid())
	for j := range jobs {
		work(j)
		j.done <- struct{}{}
	}
}

// goid is the calling goroutine's id, from the first line of its stack
// dump ("goroutine 7 [running]:").
func goid() int {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(string(f[1]))
	return n
}

var out = make(chan string, 1024)

// await waits for the worker to finish j.
//
//go:noinline
func await(j *job) { <-j.done }

//go:noinline
func handle(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	id, _ := strconv.Atoi(r.URL.Query().Get("id"))
	j := &job{id: id, t0: t0, done: make(chan struct{})}
	jobs <- j
	await(j)
	io.WriteString(w, "ok\n")
	out <- fmt.Sprintf("req %d %d %d", id, time.Since(t0).Nanoseconds(), j.workNS.Nanoseconds())
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gohandoff N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[1])
	if err != nil || n < 2 {
		fmt.Fprintln(os.Stderr, "gohandoff: N must be at least 2")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gohandoff:", err)
		os.Exit(1)
	}
	go worker()
	go http.Serve(ln, http.HandlerFunc(handle))
	done := make(chan struct{})
	go func() {
		for s := range out {
			fmt.Println(s)
		}
		close(done)
	}()
	url := "http://" + ln.Addr().String() + "/?id="
	for i := range n {
		resp, err := http.Get(url + strconv.Itoa(i))
		if err != nil {
			fmt.Fprintln(os.Stderr, "gohandoff:", err)
			os.Exit(1)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	close(out)
	<-done
}
