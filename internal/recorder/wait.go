package recorder

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Waiting between rounds. The loop waits for a ring to pass its watermark,
// for the target's exit (its pidfd) or for the poll interval to end. It
// waits in the Go runtime's network poller, not in a blocking poll(2): the
// rings' descriptors and the pidfd are in an epoll set of their own
// (level-triggered), and that set's descriptor, non-blocking, is an
// os.File the runtime polls with its others. A goroutine blocked in a
// system call holds the recorder's only P (oneCore), which the runtime's
// monitor (sysmon) takes back after 20 µs and hands on, and every return
// from the call wakes the monitor again to watch the next one: thread
// switches that cost an idle recorder more than its rounds' own work
// (20–25 µs of CPU each in a VM; docs/performance.md, "Where the recorder's
// own CPU goes"). Parked in the poller, the goroutine holds no P,
// the monitor backs off to its long sleeps, and a round costs the thread
// that returns from epoll_wait and the loop's own (Child.Run keeps it on
// its thread, at a higher priority). Where the set cannot be made or the
// runtime cannot poll it, the loop waits in poll(2).

// waiter is the loop's epoll set.
type waiter struct {
	file   *os.File // the set, in the runtime's poller; nil: not made yet
	conn   syscall.RawConn
	failed bool // no set: wait in poll(2)
	rings  int  // s.rings[:rings] are in the set
	pidfd  bool // the pidfd is in the set
	sys    bool // the system call program's ring is in the set
	ready  []unix.EpollEvent
}

// pidfdData marks the pidfd's events in the set (the rings' carry their
// index), sysData the system call program's ring's.
const (
	pidfdData = -1
	sysData   = -2
)

// open makes the set.
func (w *waiter) open() error {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	f := os.NewFile(uintptr(fd), "recorder-epoll")
	// A file the runtime does not poll refuses deadlines.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return err
	}
	conn, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return err
	}
	w.file, w.conn, w.ready = f, conn, make([]unix.EpollEvent, 8)
	return nil
}

func (w *waiter) add(fd int, data int32) error {
	return unix.EpollCtl(int(w.file.Fd()), unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: data})
}

// close lets the set go.
func (w *waiter) close() {
	if w.file != nil {
		w.file.Close()
	}
	*w = waiter{}
}

// wait blocks until a ring passes its watermark or the poll interval ends.
// A pidfd of the target process (when the kernel has pidfd_open) ends the
// wait as soon as the process exits, so the recording ends with it; wait
// then reports true.
func (s *session) wait() bool {
	w := &s.waiter
	if w.file == nil && !w.failed {
		w.failed = w.open() != nil
	}
	for !w.failed && w.rings < len(s.rings) {
		if w.add(s.rings[w.rings].Event.FD, int32(w.rings)) != nil {
			w.close()
			w.failed = true
			break
		}
		w.rings++
	}
	if !w.failed && !w.pidfd && s.pidfd >= 0 {
		if w.add(s.pidfd, pidfdData) != nil {
			w.close()
			w.failed = true
		}
		w.pidfd = true
	}
	if !w.failed && !w.sys && s.sys != nil {
		// Its records wake the recorder when it is a quarter full: the
		// ring reads ready while it holds any record, so only its
		// wake-ups (an edge) end the wait.
		if unix.EpollCtl(int(w.file.Fd()), unix.EPOLL_CTL_ADD, s.sys.RingFD(),
			&unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: sysData}) != nil {
			w.close()
			w.failed = true
		}
		w.sys = true
	}
	if w.failed {
		return s.pollWait()
	}
	if w.rings == 0 && !w.pidfd && !w.sys {
		time.Sleep(pollInterval)
		return false
	}
	exited := false
	if err := w.file.SetReadDeadline(time.Now().Add(pollInterval)); err != nil {
		return s.pollWait()
	}
	// The set is asked first, then the goroutine parks until the runtime
	// sees it readable (an edge: a descriptor of the set became ready
	// since the ask) or the deadline passes.
	err := w.conn.Read(func(fd uintptr) bool {
		n, err := unix.EpollWait(int(fd), w.ready, 0)
		if err != nil {
			return err != unix.EINTR && err != unix.EAGAIN
		}
		for _, e := range w.ready[:n] {
			if e.Fd == pidfdData && e.Events&(unix.EPOLLIN|unix.EPOLLHUP) != 0 {
				exited = true
			}
		}
		return n > 0
	})
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		// The runtime will not poll the set: poll(2) from now on.
		w.close()
		w.failed = true
		return s.pollWait()
	}
	return exited
}

// pollWait is wait in poll(2).
func (s *session) pollWait() bool {
	fds := make([]unix.PollFd, 0, len(s.rings)+1)
	for _, r := range s.rings {
		fds = append(fds, unix.PollFd{Fd: int32(r.Event.FD), Events: unix.POLLIN})
	}
	if s.pidfd >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(s.pidfd), Events: unix.POLLIN})
	}
	if len(fds) == 0 {
		time.Sleep(pollInterval)
		return false
	}
	unix.Poll(fds, int(pollInterval/time.Millisecond))
	return s.pidfd >= 0 && fds[len(fds)-1].Revents&(unix.POLLIN|unix.POLLHUP) != 0
}
