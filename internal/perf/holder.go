package perf

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// OpenRingHolder opens an event whose only use is to own the ring buffer of
// one CPU: a disabled dummy software event of the calling process on cpu,
// which never writes a record itself. Sampling events of that CPU opened
// later, on any task, write into its ring with SetOutput.
//
// It lets a recorder prepare its rings before the process to sample exists,
// and it pays early the kernel's one-time cost of a task-bound event: when no
// task-bound perf event has existed for about a second, the first one to be
// opened enables the scheduler's perf hooks and waits for an RCU grace period
// (8–30 ms on a 2-vCPU VM), after which opening more costs microseconds.
//
// The event is bound to the process's main thread, which lives as long as
// the process, so its ring is never hung up while in use.
func OpenRingHolder(cpu int) (*Event, error) {
	a := &unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_DUMMY,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		// The same clock as the sampling events (the kernel refuses to mix
		// clocks in one ring) and the same wake-up rule (the ring's own: half
		// full), as the ring is made with the holder's attributes.
		Bits:    unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv | unix.PerfBitUseClockID | unix.PerfBitWatermark,
		Clockid: unix.CLOCK_MONOTONIC,
	}
	fd, err := OpenTask(a, unix.Getpid(), cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, explain(err, Config{ExcludeKernel: true}, unix.Getpid(), cpu)
	}
	return &Event{FD: fd, CPU: cpu, TID: unix.Getpid()}, nil
}
