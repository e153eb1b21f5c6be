package rawfork

import (
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// child keeps only gate and out, waits on gate, and writes to out what it
// read: 'B' for a byte, 'E' for end-of-file.
//
//go:nosplit
//go:norace
func child(gate, out int) (int, syscall.Errno) {
	if pid, e := Clone(); pid != 0 || e != 0 {
		return pid, e
	}
	KeepOnly(gate, out)
	b := [1]byte{'E'}
	if Await(gate) {
		b[0] = 'B'
	}
	syscall.RawSyscall(syscall.SYS_WRITE, uintptr(out), uintptr(unsafe.Pointer(&b[0])), 1)
	Exit(3)
	return 0, 0
}

// fds lists the open descriptors of process pid.
func fds(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		n, _ := strconv.Atoi(e.Name())
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// A forked child keeps only the descriptors it is given, tells a byte
// from end-of-file, and exits with its own code.
func TestForkGate(t *testing.T) {
	for _, byteSent := range []bool{true, false} {
		var gate, out [2]int
		if err := unix.Pipe2(gate[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		if err := unix.Pipe2(out[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		pid, errno := Fork(func(*uint64) (int, syscall.Errno) { return child(gate[0], out[1]) })
		if errno != 0 {
			t.Fatal(errno)
		}
		unix.Close(gate[0])
		unix.Close(out[1])
		// Until it has closed the rest, its descriptors are this process's.
		want := []int{gate[0], out[1]}
		slices.Sort(want)
		deadline := time.Now().Add(time.Minute)
		for got := fds(t, pid); !slices.Equal(got, want); got = fds(t, pid) {
			if time.Now().After(deadline) {
				t.Fatalf("the child holds descriptors %v, want %v", got, want)
			}
			time.Sleep(time.Millisecond)
		}
		if byteSent {
			unix.Write(gate[1], []byte{1})
		}
		unix.Close(gate[1])
		var b [1]byte
		n, err := unix.Read(out[0], b[:])
		unix.Close(out[0])
		want1 := byte('E')
		if byteSent {
			want1 = 'B'
		}
		if n != 1 || err != nil || b[0] != want1 {
			t.Errorf("byte sent %v: the child said %q (%d, %v), want %q", byteSent, b[:n], n, err, want1)
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Exited() || ws.ExitStatus() != 3 {
			t.Errorf("byte sent %v: child status %v (%v), want exit 3", byteSent, ws, err)
		}
	}
}
