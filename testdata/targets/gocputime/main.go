// gocputime [ROUNDS]: a goroutine locked to its thread calls work() ROUNDS
// times (default 5); each call spins for about 20 ms of its thread's CPU
// time and prints "work CPU", the thread's CPU time inside it, ns
// (CLOCK_THREAD_CPUTIME_ID).
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"
)

const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID

func threadCPU() int64 {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

var sink uint64

//go:noinline
func work() {
	c0 := threadCPU()
	for threadCPU()-c0 < 20_000_000 {
		for i := uint64(0); i < 1000; i++ {
			sink += i ^ (sink >> 3)
		}
	}
	fmt.Printf("work %d\n", threadCPU()-c0)
}

func main() {
	rounds := 5
	if len(os.Args) > 1 {
		if n, err := strconv.Atoi(os.Args[1]); err == nil {
			rounds = n
		}
	}
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		for range rounds {
			work()
		}
		close(done)
	}()
	<-done
}
