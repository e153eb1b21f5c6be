// gohandoff is a net/http server whose handler hands each request to a
// single worker goroutine over a channel and waits for its answer on
// another (in await): the latency of a request is mostly the worker's, on
// another goroutine. It listens on loopback and sends itself N requests,
// one after another, from a client in the same process; the HTTP handler,
// serve, runs each in handle. The worker's work spins 2 ms for one
// request in four and 100 µs for the others. The program times each
// handle and each work over the spans the probes time (from just before
// the call to the function's last statement, with a clock refinement
// never probes: see clock) and prints "req ID HANDLE_NS
// WORK_NS START WAITED_NS" for each request (START when handle was
// called, ns of CLOCK_MONOTONIC, the probes' clock; WAITED_NS the part of
// work's time after await began: the worker can start a job while the
// handler, on a busy machine, has not yet come to wait for it, and that
// part of work is not what the request waited on; 0 when the handler had
// not parked by the time the worker sent its answer, as a send that
// finds no receiver waiting tells: preempted between await's start and
// its park, it then takes the answer without parking, and work was never
// what it waited on) and "worker goroutine
// GOID", the worker's id as the runtime's stack dump names it, and at the
// end "cpu USER_NS SYS_NS", the process's CPU time (the probes' traps are
// its system time).
//
// With "close", the worker ends each job by closing its channel instead
// of sending on it: the runtime then readies the waiting handler on the
// scheduler's own stack, not the worker's. The handler tells a job it
// never parked for by trying its receive before it waits (WAITED_NS 0
// when the channel was closed already); a close that lands between that
// try and the park, a few instructions, is not told.
//
// With "mutex", handleMutex instead takes a sync.Mutex in lockedUpdate
// that a holder goroutine keeps taking to run holdBig (2 ms one time in
// four, 200 µs the others) and releasing for 300 µs: a request's wait is
// the holder's, and the program prints "holder goroutine GOID".
//
// With "timer", handleTimer waits in nap on a timer's channel
// (time.After) for 2 ms one time in four and 100 µs the others: the
// wait is the timer's; and with "net", handleNet asks a backend goroutine
// of the program over a loopback TCP connection, and waits in fetch for
// its answer, which the backend sends after spinning 2 ms one time in
// four and 100 µs the others (in answer): the wait is the backend's,
// whose write the network poller finds (the program prints "backend fd
// FD", its connection's descriptor, "backend goroutine GOID", and for
// each request "answer ID NS", answer's time after fetch began to read). Both
// print nap's or fetch's time in WORK_NS and WAITED_NS.
//
// With "reset", handleReset hands the job to the worker with a timer
// (time.NewTimer, an hour) and waits in napReset on the timer's channel;
// the worker, its work done, resets the timer to 100 µs: the request's
// wait is the worker's until the reset, then the timer's.
//
// With "after", handleAfter arms a time.AfterFunc (2 ms one time in
// three, 100 µs the others) whose function, on a goroutine of its own,
// runs work and closes the job's channel, and waits for it in await:
// the request's wait is the timer's, then that goroutine's work. The
// program prints "after ID ARMED_NS FIRED_NS": from arming the timer to
// await's start, and from await's start to the function's first
// statement (0 when it began before).
//
// With "unix", the same as "net" over a Unix socket: the kernel hands
// the backend's answer over in its write system call, where TCP's
// loopback delivers it in a softirq.
// Usage: gohandoff N [chan|close|mutex|timer|net|unix|reset|after]
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	_ "unsafe" // go:linkname
)

// nanotime is the runtime's CLOCK_MONOTONIC reading, the probes' clock.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// clock is how the program reads nanotime: through a function value, a
// call no function's static callees name, so that refinement, which
// probes the callees of the functions it breaks down, never probes the
// program's own clock. A probed clock returns through a trap, where the
// kernel reschedules a busy machine: the preemption would fall after the
// reading, outside the program's span and inside the probes' (at the
// end of work) or the other way round (before its call).
var clock = nanotime

type job struct {
	id               int
	start            int64 // nanotime just before handle's call
	awaitAt          int64 // nanotime when await began
	armedAt          int64 // nanotime when handleAfter armed its timer
	workFrom, workTo int64 // nanotime when work began and ended
	done             chan struct{}
	timer            *time.Timer
	unparked         bool // the handler never parked for this job (chan, close)
	handleNS, workNS time.Duration
}

var (
	jobs      = make(chan *job)
	closing   bool // the worker closes a job's channel
	resetting bool // the worker resets a job's timer
	afterMode bool // a time.AfterFunc's goroutine does the job
)

func spin(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}

//go:noinline
func work(j *job) {
	if j.id%4 == 0 {
		spin(2 * time.Millisecond)
	} else {
		spin(100 * time.Microsecond)
	}
	j.workTo = clock()
	j.workNS = time.Duration(j.workTo - j.workFrom)
}

// waited is the part of work's time after await began.
func (j *job) waited() int64 {
	if j.unparked {
		return 0
	}
	return max(0, j.workTo-max(j.workFrom, j.awaitAt))
}

// worker serves the jobs one at a time.
func worker() {
	fmt.Printf("worker goroutine %d\n", goid())
	for j := range jobs {
		j.workFrom = clock()
		work(j)
		if resetting {
			j.timer.Reset(100 * time.Microsecond)
		} else if closing {
			close(j.done)
		} else {
			select {
			case j.done <- struct{}{}: // the handler was parked, waiting
			default:
				// The handler has not come to wait yet (preempted after
				// await began): it will find this send waiting and not
				// park, and work was never what it waited on.
				j.unparked = true
				j.done <- struct{}{}
			}
		}
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
func await(j *job) {
	j.awaitAt = clock()
	if closing {
		// A close cannot be tried the way a send is: the handler tries
		// its receive instead. When the channel is closed already, the
		// handler was kept from coming to wait (preempted after await
		// began) until the work was done, takes the close without
		// parking, and work was never what it waited on.
		select {
		case <-j.done:
			j.unparked = true
			return
		default:
		}
	}
	<-j.done
}

var (
	mu    sync.Mutex
	holds int
)

//go:noinline
func holdBig() {
	holds++
	if holds%4 == 0 {
		spin(2 * time.Millisecond)
	} else {
		spin(200 * time.Microsecond)
	}
}

// holder takes the lock in turns with the requests until stop closes.
func holder(stop chan struct{}) {
	fmt.Printf("holder goroutine %d\n", goid())
	for {
		select {
		case <-stop:
			return
		default:
		}
		mu.Lock()
		holdBig()
		mu.Unlock()
		spin(300 * time.Microsecond)
	}
}

//go:noinline
func lockedUpdate() {
	mu.Lock()
	spin(20 * time.Microsecond)
	mu.Unlock()
}

//go:noinline
func handleMutex(j *job) {
	lockedUpdate()
	j.handleNS = time.Duration(clock() - j.start)
}

// serveMutex is the HTTP handler of the mutex mode.
func serveMutex(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.Atoi(r.URL.Query().Get("id"))
	j := &job{id: id}
	j.start = clock()
	handleMutex(j)
	io.WriteString(w, "ok\n")
	out <- fmt.Sprintf("req %d %d 0 %d 0", id, j.handleNS.Nanoseconds(), j.start)
}

//go:noinline
func nap(j *job) {
	d := 100 * time.Microsecond
	if j.id%4 == 0 {
		d = 2 * time.Millisecond
	}
	j.workFrom = clock()
	<-time.After(d)
	j.workTo = clock()
}

//go:noinline
func handleTimer(j *job) {
	nap(j)
	j.handleNS = time.Duration(clock() - j.start)
}

// backend answers each line it reads on c with a line, after spinning
// in answer.
func backend(c net.Conn) {
	fmt.Printf("backend goroutine %d\n", goid())
	r := bufio.NewReader(c)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return
		}
		id, _ := strconv.Atoi(strings.TrimSpace(l))
		answer(id)
		if _, err := io.WriteString(c, l); err != nil {
			return
		}
	}
}

// answers are when answer ran for each request id ([2]int64: from, to).
var answers sync.Map

// answer is the backend's work for request id.
//
//go:noinline
func answer(id int) {
	from := clock()
	if id%4 == 0 {
		spin(2 * time.Millisecond)
	} else {
		spin(100 * time.Microsecond)
	}
	answers.Store(id, [2]int64{from, clock()})
}

var (
	backendConn net.Conn
	backendR    *bufio.Reader
)

//go:noinline
func fetch(j *job) {
	j.workFrom = clock()
	fmt.Fprintf(backendConn, "%d\n", j.id)
	j.awaitAt = clock()
	if _, err := backendR.ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "gohandoff:", err)
		os.Exit(1)
	}
	j.workTo = clock()
}

//go:noinline
func handleNet(j *job) {
	fetch(j)
	j.handleNS = time.Duration(clock() - j.start)
}

// serveWait is the HTTP handler of the timer and net modes.
func serveWait(handle func(*job)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.URL.Query().Get("id"))
		j := &job{id: id}
		j.start = clock()
		handle(j)
		io.WriteString(w, "ok\n")
		ns := j.workTo - j.workFrom
		out <- fmt.Sprintf("req %d %d %d %d %d", id, j.handleNS.Nanoseconds(), ns, j.start, ns)
		if a, ok := answers.Load(id); ok {
			// The backend's answer while the request waited for it.
			t := a.([2]int64)
			out <- fmt.Sprintf("answer %d %d", id, max(0, t[1]-max(t[0], j.awaitAt)))
		}
	}
}

// handle is the request's interval: it hands the job to the worker and
// waits; its last statement times it from just before the call.
//
//go:noinline
func handle(j *job) {
	jobs <- j
	await(j)
	j.handleNS = time.Duration(clock() - j.start)
}

// handleAfter arms a timer whose function does the job, and waits for it.
//
//go:noinline
func handleAfter(j *job) {
	d := 100 * time.Microsecond
	if j.id%3 == 0 {
		d = 2 * time.Millisecond
	}
	j.armedAt = clock()
	time.AfterFunc(d, func() {
		j.workFrom = clock()
		work(j)
		close(j.done)
	})
	await(j)
	j.handleNS = time.Duration(clock() - j.start)
}

// serve is the HTTP handler: the request's job, handle, the answer.
// napReset waits for the timer the worker resets.
//
//go:noinline
func napReset(j *job) {
	j.awaitAt = clock()
	<-j.timer.C
}

//go:noinline
func handleReset(j *job) {
	jobs <- j
	napReset(j)
	j.handleNS = time.Duration(clock() - j.start)
}

func serve(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.Atoi(r.URL.Query().Get("id"))
	j := &job{id: id, done: make(chan struct{})}
	if resetting {
		// Made before the span begins: the probes time handleReset's
		// call, and making a timer can take a millisecond on a busy
		// machine (it allocates, and may help the collector).
		j.timer = time.NewTimer(time.Hour)
	}
	j.start = clock()
	switch {
	case resetting:
		handleReset(j)
	case afterMode:
		handleAfter(j)
		out <- fmt.Sprintf("after %d %d %d", id, j.awaitAt-j.armedAt, max(0, j.workFrom-j.awaitAt))
	default:
		handle(j)
	}
	io.WriteString(w, "ok\n")
	out <- fmt.Sprintf("req %d %d %d %d %d", id, j.handleNS.Nanoseconds(), j.workNS.Nanoseconds(), j.start, j.waited())
}

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 || len(os.Args) == 3 && !slices.Contains([]string{"chan", "close", "mutex", "timer", "net", "unix", "reset", "after"}, os.Args[2]) {
		fmt.Fprintln(os.Stderr, "usage: gohandoff N [chan|close|mutex|timer|net|unix|reset|after]")
		os.Exit(2)
	}
	mode := "chan"
	if len(os.Args) == 3 {
		mode = os.Args[2]
	}
	closing = mode == "close" || mode == "after"
	resetting = mode == "reset"
	afterMode = mode == "after"
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
	handler := http.HandlerFunc(serve)
	stop := make(chan struct{})
	switch mode {
	case "mutex":
		handler = serveMutex
		go holder(stop)
	case "timer":
		handler = serveWait(handleTimer)
	case "net", "unix":
		handler = serveWait(handleNet)
		network, addr := "tcp", "127.0.0.1:0"
		if mode == "unix" {
			network, addr = "unix", filepath.Join(os.TempDir(), fmt.Sprintf("gohandoff-%d.sock", os.Getpid()))
			defer os.Remove(addr)
		}
		bl, err := net.Listen(network, addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gohandoff:", err)
			os.Exit(1)
		}
		go func() {
			c, err := bl.Accept()
			if err == nil {
				backend(c)
			}
		}()
		if backendConn, err = net.Dial(network, bl.Addr().String()); err != nil {
			fmt.Fprintln(os.Stderr, "gohandoff:", err)
			os.Exit(1)
		}
		backendR = bufio.NewReader(backendConn)
		if rc, err := backendConn.(syscall.Conn).SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { fmt.Printf("backend fd %d\n", fd) })
		}
	case "after":
	default:
		go worker()
	}
	go http.Serve(ln, handler)
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
	close(stop)
	close(out)
	<-done
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		fmt.Printf("cpu %d %d\n", ru.Utime.Nano(), ru.Stime.Nano())
	}
}
