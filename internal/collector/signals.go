package collector

import (
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Relay passes the signals that end culprit (SIGINT, SIGTERM, SIGHUP) on to
// a launched command while it runs: a terminal's Ctrl-C reaches the
// command by itself, so SIGINT is not sent again while the command's
// process group is its terminal's foreground group; a signal sent to
// culprit alone (kill -INT from a script, a supervisor) is passed on; a
// second signal kills the command.
type Relay struct {
	sigs   chan os.Signal
	caught chan struct{}
	done   chan struct{}
	pid    atomic.Int64
}

// CatchSignals starts catching the signals in the background (the runtime's
// first signal.Notify starts a thread and waits for it, a fraction of a
// millisecond better spent starting the command).
func CatchSignals() *Relay {
	r := &Relay{sigs: make(chan os.Signal, 4), caught: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.caught)
		defer func() { recover() }() // a collector goroutine never ends culprit
		signal.Notify(r.sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	}()
	return r
}

// Caught waits until the signals are caught: a command must not be let run
// before, or a Ctrl-C then would end culprit and leave it unrecorded.
func (r *Relay) Caught() { <-r.caught }

// Forward passes the signals on to pid from now on.
func (r *Relay) Forward(pid int) {
	r.pid.Store(int64(pid))
	go func() {
		defer func() { recover() }() // a collector goroutine never ends culprit
		interrupted := false
		for {
			select {
			case <-r.done:
				return
			case sig := <-r.sigs:
				if interrupted {
					unix.Kill(pid, unix.SIGKILL)
				} else if sig != os.Interrupt || !terminalInterrupts(pid) {
					unix.Kill(pid, sig.(syscall.Signal))
				}
				interrupted = true
			}
		}
	}()
}

// Stop restores the signals' handling as it was before CatchSignals.
func (r *Relay) Stop() {
	<-r.caught
	signal.Stop(r.sigs)
	close(r.done)
}

// terminalInterrupts says whether a Ctrl-C at culprit's controlling
// terminal reaches process pid by itself: pid's process group is the
// terminal's foreground group. The kernel sends a terminal's SIGINT to that
// whole group; a SIGINT culprit gets otherwise (no terminal, a background
// job, kill from another process) reached culprit alone.
func terminalInterrupts(pid int) bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDONLY|unix.O_NOCTTY, 0)
	if err != nil {
		return false // no controlling terminal
	}
	defer tty.Close()
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	if err != nil {
		return false
	}
	group, err := unix.Getpgid(pid)
	return err == nil && group == fg
}
