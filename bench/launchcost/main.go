// Command launchcost measures how long a collector waits from asking for a
// command to having it stopped at its exec: collector.Start (a raw fork that
// waits on a pipe, seized before its exec) against os/exec with
// PTRACE_TRACEME (vfork, then a SIGTRAP stop at exec), N of each
// interleaved, on /bin/true.
//
//	go run ./bench/launchcost -n 200
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/collector"
)

func main() {
	n := flag.Int("n", 200, "starts of each kind")
	flag.Parse()
	runtime.LockOSThread()
	var seized, traceme []time.Duration
	for i := 0; i < *n; i++ {
		t0 := time.Now()
		c, err := collector.Start([]string{"/bin/true"}, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		seized = append(seized, time.Since(t0))
		c.Release()
		c.Wait()

		t0 = time.Now()
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var ws unix.WaitStatus
		unix.Wait4(cmd.Process.Pid, &ws, 0, nil)
		traceme = append(traceme, time.Since(t0))
		unix.PtraceDetach(cmd.Process.Pid)
		cmd.Wait()
	}
	q := func(d []time.Duration, f float64) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[int(f*float64(len(d)-1))]
	}
	fmt.Printf("to the exec stop, %d each: collector.Start median %v (p10 %v, p90 %v); TRACEME median %v (p10 %v, p90 %v)\n",
		*n, q(seized, 0.5), q(seized, 0.1), q(seized, 0.9), q(traceme, 0.5), q(traceme, 0.1), q(traceme, 0.9))
}
