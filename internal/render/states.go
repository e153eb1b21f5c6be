package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/sched"
)

// statesShown are the columns of StatesText, in order.
var statesShown = []sched.State{sched.OnCPU, sched.Runnable, sched.Lock, sched.IO, sched.Sleep, sched.Stopped}

// StatesText prints each thread's time by scheduler state and, beneath
// it, who woke it from its waits.
func StatesText(w io.Writer, tl *sched.Timeline, sums []sched.Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d threads, %d switches onto a CPU, %d switches away, %d wake-ups over %s\n",
		len(sums), tl.SwitchIns, tl.Switches, tl.Wakeups, Duration(float64(tl.End-tl.Start)))
	fmt.Fprintf(&b, "%8s %8s", "pid", "tid")
	for _, s := range statesShown {
		fmt.Fprintf(&b, " %9s", s)
	}
	b.WriteString("  thread\n")
	for _, s := range sums {
		fmt.Fprintf(&b, "%8d %8d", s.PID, s.TID)
		for _, st := range statesShown {
			fmt.Fprintf(&b, " %9s", Duration(float64(s.Time[st])))
		}
		fmt.Fprintf(&b, "  %s\n", s.Name)
		for _, wt := range s.Wakers {
			who := "no recorded thread (an interrupt, another program, an exit)"
			if wt.TID != 0 {
				who = fmt.Sprintf("%s (tid %d)", wt.Name, wt.TID)
			}
			fmt.Fprintf(&b, "%17s %9s in %d %s waits, woken by %s\n", "", Duration(float64(wt.Time)), wt.Waits, wt.State, who)
		}
	}
	for _, m := range tl.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", m)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type jsonStatesWaker struct {
	TID   uint32      `json:"tid"`
	Name  string      `json:"name"`
	State sched.State `json:"state"`
	NS    uint64      `json:"ns"`
	Waits int         `json:"waits"`
}

type jsonStatesInterval struct {
	From      uint64      `json:"from"`
	To        uint64      `json:"to"`
	State     sched.State `json:"state"`
	Waker     uint32      `json:"waker,omitempty"`
	Interrupt bool        `json:"interrupt,omitempty"`
	Unwoken   bool        `json:"unwoken,omitempty"`
	// WakeFromRunDelay: the unwoken wait ends at its wake-up as the
	// kernel's run delay places it (sched.Interval.WakeFromRunDelay).
	WakeFromRunDelay bool `json:"wake_from_run_delay,omitempty"`
	// KernelLength: the run's length is the kernel's account of it,
	// KernelNS, unless the thread was seen running after it
	// (sched.Interval.KernelLength).
	KernelLength bool   `json:"kernel_length,omitempty"`
	KernelNS     uint64 `json:"kernel_ns,omitempty"`
	// Woken: the recorded wake-up of a wait that ends later, where the
	// kernel's run delay places the thread's queueing
	// (sched.Interval.Woken).
	Woken uint64 `json:"woken,omitempty"`
}

type jsonStatesThread struct {
	PID       uint32               `json:"pid"`
	TID       uint32               `json:"tid"`
	Name      string               `json:"name"`
	NS        map[string]uint64    `json:"ns"`
	Wakers    []jsonStatesWaker    `json:"wakers"`
	Intervals []jsonStatesInterval `json:"intervals,omitempty"`
}

// StatesJSON writes the summaries (and, with intervals, every interval)
// as JSON; the schema is in docs/report-json.md.
func StatesJSON(w io.Writer, tl *sched.Timeline, sums []sched.Summary, intervals bool) error {
	out := struct {
		Start     uint64 `json:"start"`
		End       uint64 `json:"end"`
		SwitchIns int    `json:"switch_ins"`
		Switches  int    `json:"switches"`
		Wakeups   int    `json:"wakeups"`
		// KernelRuns: the runs whose length is the kernel's account
		// (sched.Timeline.KernelRuns).
		KernelRuns int                `json:"kernel_runs"`
		Threads    []jsonStatesThread `json:"threads"`
		Warnings   []string           `json:"warnings"`
	}{Start: tl.Start, End: tl.End, SwitchIns: tl.SwitchIns, Switches: tl.Switches, Wakeups: tl.Wakeups, KernelRuns: tl.KernelRuns,
		Threads: []jsonStatesThread{}, Warnings: jsonWarnings(tl.Warnings)}
	for _, s := range sums {
		t := jsonStatesThread{PID: s.PID, TID: s.TID, Name: s.Name, NS: map[string]uint64{}, Wakers: []jsonStatesWaker{}}
		for _, st := range statesShown {
			t.NS[st.String()] = s.Time[st]
		}
		for _, wt := range s.Wakers {
			t.Wakers = append(t.Wakers, jsonStatesWaker{TID: wt.TID, Name: wt.Name, State: wt.State, NS: wt.Time, Waits: wt.Waits})
		}
		if intervals {
			for _, iv := range tl.Threads[s.TID].Intervals {
				t.Intervals = append(t.Intervals, jsonStatesInterval{From: iv.From, To: iv.To, State: iv.State, Waker: iv.Waker, Interrupt: iv.Interrupt, Unwoken: iv.Unwoken, WakeFromRunDelay: iv.WakeFromRunDelay,
					KernelLength: iv.KernelLength, KernelNS: iv.KernelNS, Woken: iv.Woken})
			}
		}
		out.Threads = append(out.Threads, t)
	}
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(out)
}
