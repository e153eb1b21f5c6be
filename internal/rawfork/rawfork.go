// Package rawfork forks the calling thread into a small child process that
// runs raw system calls only: the launched command's gate before its exec
// (collector), the ptrace collector's sentinel and the rcu_expedited
// guardian (perf). os/exec and syscall.ForkExec cannot do this: they exec
// at once, and the children here must wait on a pipe first, or never exec.
//
// The parent side (Fork) holds syscall.ForkLock, so that no descriptor is
// created without close-on-exec while the child is forked, and blocks every
// signal, so that no Go signal handler runs in the child, as
// syscall.forkExec does. The child side is a //go:nosplit, //go:norace
// function of its package that calls Clone and, in the child, only the
// primitives below and other raw system calls: no Go runtime code may run
// there (no allocation, no stack growth, no scheduler).
package rawfork

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Fork calls fork, which must call Clone once, with syscall.ForkLock held
// and every signal of the calling thread blocked; mask is the thread's
// mask before, for a child that restores it (the child starts with every
// signal blocked).
func Fork(fork func(mask *uint64) (int, syscall.Errno)) (int, syscall.Errno) {
	all := ^uint64(0)
	var old uint64
	syscall.ForkLock.Lock()
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&all)), uintptr(unsafe.Pointer(&old)), 8, 0, 0)
	pid, errno := fork(&old)
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	syscall.ForkLock.Unlock()
	return pid, errno
}

// Clone forks the calling thread (clone with SIGCHLD as the exit signal).
// It returns twice: the child's pid in the parent, 0 in the child.
//
//go:nosplit
//go:norace
func Clone() (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// Await blocks until a byte can be read from fd or it reads end-of-file
// (every writer gone: the parent died), and reports which: true for a
// byte, false for end-of-file or a read that failed.
//
//go:nosplit
//go:norace
func Await(fd int) bool {
	var b [1]byte
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1)
		if e != syscall.EINTR {
			return e == 0 && n == 1
		}
	}
}

// Close closes fd.
//
//go:nosplit
//go:norace
func Close(fd int) {
	syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(fd), 0, 0)
}

// KeepOnly closes every descriptor but a and b (-1: none).
//
//go:nosplit
//go:norace
func KeepOnly(a, b int) {
	if a > b {
		a, b = b, a
	}
	from := 0
	for _, k := range [2]int{a, b} {
		if k < from {
			continue
		}
		if k > from {
			syscall.RawSyscall(unix.SYS_CLOSE_RANGE, uintptr(from), uintptr(k-1), 0)
		}
		from = k + 1
	}
	syscall.RawSyscall(unix.SYS_CLOSE_RANGE, uintptr(from), ^uintptr(0)>>32, 0)
}

// SetMask sets the calling thread's signal mask.
//
//go:nosplit
//go:norace
func SetMask(mask *uint64) {
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(mask)), 0, 8, 0, 0)
}

// Exit ends the process with code.
//
//go:nosplit
//go:norace
func Exit(code int) {
	for {
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, uintptr(code), 0, 0)
	}
}
