package e2e

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/analysis/introperf"
	"github.com/culprit-dev/culprit/internal/analysis/sched"
	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/render"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// A real recording read as a stream (the samples read again in time order
// rather than held) gives what the loaded samples give: the same samples
// in the same order with the same stacks, and the same timelines, thread
// states and inferred latencies. Two threads on two CPUs with every event
// kind: the rings are drained CPU by CPU, so the file is not in time order.
func TestStreamSameAsLoad(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "prodcons", []string{"prodcons.c"}, "-O2", "-g", "-fno-omit-frame-pointer", "-pthread")
	out := rec(t)
	mustRun(t, "record", "-F", "4999", "--events", "cpu,syscalls,sched,wakeup", "-o", out, "--", bin, "300")
	full, err := loader.Load([]string{out}, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := loader.Load([]string{out}, loader.Options{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Streamed() || len(st.Samples) != 0 || st.SampleCount() != len(full.Samples) || len(full.Samples) < 1000 {
		t.Fatalf("streamed %v, %d samples held, %d streamed, %d loaded", st.Streamed(), len(st.Samples), st.SampleCount(), len(full.Samples))
	}
	counts := full.EventCounts()
	if len(counts) < 4 {
		t.Errorf("event kinds recorded: %v, want CPU ticks, system calls, switches and wake-ups", counts)
	}
	if !reflect.DeepEqual(st.EventCounts(), counts) || !reflect.DeepEqual(st.Stacks, full.Stacks) || st.StartTime != full.StartTime {
		t.Errorf("event counts, stacks or start differ")
	}
	list := func(p *profile.Profile) []string {
		var l []string
		if err := p.EachSample(func(s *profile.Sample) bool {
			l = append(l, fmt.Sprintf("%d %d/%d %d %v %d %v", s.Time, s.PID, s.TID, s.CPU, s.Event, s.Arg, p.StackAt(s.Stack)))
			return true
		}); err != nil {
			t.Fatal(err)
		}
		return l
	}
	// A time window over the middle half of the CPU samples: it holds
	// some whatever the machine did to the program's first milliseconds
	// (a fixed 50-150 ms once held none).
	var ts []int64
	for _, s := range full.Apply(profile.Filter{}).Samples {
		ts = append(ts, int64(s.Time-full.StartTime))
	}
	slices.Sort(ts)
	if len(ts) < 100 {
		t.Fatalf("%d CPU samples, want 100 or more", len(ts))
	}
	from, to := time.Duration(ts[len(ts)/4]), time.Duration(ts[3*len(ts)/4]+1)
	for _, f := range []profile.Filter{{AllEvents: true}, {}, {AllEvents: true, Kernel: profile.KernelExclude, Hide: regexp.MustCompile("pthread")},
		{HasFrom: true, From: from, HasTo: true, To: to}} {
		a, b := full.Apply(f), st.Apply(f)
		if la, lb := list(a), list(b); !reflect.DeepEqual(la, lb) || len(la) == 0 {
			t.Errorf("filter %+v: %d samples streamed, %d loaded", f, len(lb), len(la))
		}
		for name, write := range map[string]func(*profile.Profile) ([]byte, error){
			"speedscope": func(p *profile.Profile) ([]byte, error) {
				var b bytes.Buffer
				err := render.WriteSpeedscope(&b, p)
				return b.Bytes(), err
			},
			"chrome": func(p *profile.Profile) ([]byte, error) {
				var b bytes.Buffer
				err := render.WriteChrome(&b, p)
				return b.Bytes(), err
			},
		} {
			wa, err := write(a)
			if err != nil {
				t.Fatal(err)
			}
			wb, err := write(b)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(wa, wb) {
				t.Errorf("filter %+v: %s export differs streamed (%d bytes) from loaded (%d bytes)", f, name, len(wb), len(wa))
			}
		}
	}
	sa, err := sched.States(full)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sched.States(st)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sa, sb) {
		t.Errorf("thread states differ streamed")
	}
	for _, o := range []introperf.Options{{KeepInstances: true, Timeline: true}, {Slowest: introperf.NewSlowest(introperf.Conservative, 20)}} {
		ra := introperf.Analyze(full.Apply(profile.Filter{AllEvents: true}), o)
		rb := introperf.Analyze(st.Apply(profile.Filter{AllEvents: true}), o)
		if rb.Err != nil {
			t.Fatal(rb.Err)
		}
		var ja, jb bytes.Buffer
		if err := render.LatencyJSON(&ja, ra, render.LatencyView{}); err != nil {
			t.Fatal(err)
		}
		if err := render.LatencyJSON(&jb, rb, render.LatencyView{}); err != nil {
			t.Fatal(err)
		}
		if ra.Used == 0 || !bytes.Equal(ja.Bytes(), jb.Bytes()) || !reflect.DeepEqual(ra.EventCounts, rb.EventCounts) || ra.Objects.Main != rb.Objects.Main {
			t.Errorf("latency inference differs streamed: %d events used, %d loaded", rb.Used, ra.Used)
		}
	}
}
