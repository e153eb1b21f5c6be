// Command cputime runs a command and writes its CPU time (user + system,
// of the command and the children it waited for) in seconds to the file
// named by its first argument, to the microsecond: the rusage the kernel
// reports at wait4, whose total is the scheduler's own runtime count,
// where /usr/bin/time prints 10 ms ticks.
//
//	cputime OUT COMMAND [ARG...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: cputime OUT COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "cputime:", err)
		os.Exit(1)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	us := ru.Utime.Sec*1e6 + ru.Utime.Usec + ru.Stime.Sec*1e6 + ru.Stime.Usec
	if werr := os.WriteFile(os.Args[1], fmt.Appendf(nil, "%d.%06d\n", us/1e6, us%1e6), 0o644); werr != nil {
		fmt.Fprintln(os.Stderr, "cputime:", werr)
		os.Exit(1)
	}
	if err != nil {
		os.Exit(cmd.ProcessState.ExitCode())
	}
}
