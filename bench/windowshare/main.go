// Command windowshare says how the system calls of a stretch of a recording
// were recorded: for how long every call was (a span of --syscall-windows
// auto below the rate, or off), for how long only in windows, and for how
// long not at all (between windows). bench/eventcost.sh asks it about the
// benchmark's own time, whose cost depends on those shares.
//
//	windowshare now             prints CLOCK_MONOTONIC in ns
//	windowshare REC FROM TO     FROM and TO in ns of CLOCK_MONOTONIC
//
// The second form prints "all-along MS windows MS between MS spans N": N is
// the spans with every call recorded that overlap the stretch.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/recording"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "windowshare:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 1 && args[0] == "now" {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			return err
		}
		fmt.Println(ts.Nano())
		return nil
	}
	if len(args) != 3 {
		return errors.New("usage: windowshare now | windowshare REC FROM TO")
	}
	from, err1 := strconv.ParseUint(args[1], 10, 64)
	to, err2 := strconv.ParseUint(args[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil || to <= from {
		return fmt.Errorf("FROM and TO are ns of CLOCK_MONOTONIC, FROM before TO: %s %s", args[1], args[2])
	}
	r, err := recording.Open(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	var along, in uint64
	spans, seen := 0, false
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		w, ok := rec.(*recording.SyscallWindow)
		if !ok {
			continue
		}
		seen = true
		a, b := max(w.Start, from), min(w.End, to)
		if b <= a {
			continue
		}
		if w.On == 0 {
			along += b - a
			spans++
		} else {
			in += b - a
		}
	}
	if !seen {
		// No windows: every call recorded all along.
		along, spans = to-from, 1
	}
	ms := func(ns uint64) float64 { return float64(ns) / 1e6 }
	fmt.Printf("all-along %.1f windows %.1f between %.1f spans %d\n", ms(along), ms(in), ms(to-from-along-in), spans)
	return nil
}
