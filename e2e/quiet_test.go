package e2e

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Another culprit session that samples every CPU (culprit record's
// per-CPU events, at 9999 Hz in many tests) slows every thread on the
// machine, traced or not: each of its timer interrupts costs the thread
// it lands on tens of µs on this VM, which the kernel counts as that
// thread's time on the CPU (no IRQ time accounting; a plain ALU loop's
// CLOCK_THREAD_CPUTIME_ID went from 0.36 to 0.77 s beside a record at
// 9999 Hz). A trace measures those calls right: they did take that long.
// But a session that starts or ends during a test that fits calls' times
// against their order changes the program's speed half way, and the fit
// with it. Such a test runs its trace alone (quietCPU): every culprit
// command the e2e tests of any checkout run through inDir (run, mustRun)
// holds cpuLock shared while it runs, and quietCPU holds it exclusively.
// Sessions started otherwise (outside the e2e tests, or by a test that
// starts culprit itself) are not kept out.
const cpuLock = "culprit-e2e-cpu.lock"

var (
	quietMu sync.Mutex
	quiet   bool // this process holds cpuLock exclusively
)

// lockCPU takes cpuLock (exclusive: unix.LOCK_EX, else shared) and
// returns its release; nil when the lock file cannot be opened or this
// process already holds it exclusively.
func lockCPU(t *testing.T, how int) func() {
	quietMu.Lock()
	held := quiet
	quietMu.Unlock()
	if held {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(os.TempDir(), cpuLock), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Logf("no %s: %v", cpuLock, err)
		return nil
	}
	// Shared holders come and go between commands; an exclusive waiter
	// gets its turn at one of those gaps.
	deadline := time.Now().Add(10 * time.Minute)
	for unix.Flock(int(f.Fd()), how|unix.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			f.Close()
			t.Fatalf("%s: other e2e runs' culprit sessions held it for 10 minutes", cpuLock)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return func() { f.Close() }
}

// quietCPU makes the calling test's culprit sessions the only ones of the
// e2e tests on the machine until the returned release (see cpuLock).
func quietCPU(t *testing.T) func() {
	release := lockCPU(t, unix.LOCK_EX)
	if release == nil {
		return func() {}
	}
	quietMu.Lock()
	quiet = true
	quietMu.Unlock()
	return func() {
		quietMu.Lock()
		quiet = false
		quietMu.Unlock()
		release()
	}
}
