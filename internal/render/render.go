// Package render turns profile results into text, JSON and foreign formats:
// the flat and caller reports as aligned text or JSON (schemas in
// docs/report-json.md), source listings, call trees and callers/callees, and whole
// profiles as pprof, folded stacks, speedscope and Chrome trace event files
// and SVG flame graphs, and the latency and contexts results of package
// introperf (text, JSON, Chrome trace, DOT, HTML). It only writes to the io.Writer it
// is given; it never reads files or the kernel.
package render

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
)

// unknownFrame stands for the empty stack of a sample.
var unknownFrame = profile.Frame{Function: profile.Unknown, Object: profile.Unknown}

// stackFrames returns the frames of a sample's stack, innermost first; an
// empty stack is one "[unknown]" frame.
func stackFrames(p *profile.Profile, stack int32) []profile.Frame {
	st := p.StackAt(stack)
	if len(st) == 0 {
		return []profile.Frame{unknownFrame}
	}
	out := make([]profile.Frame, len(st))
	for i, fi := range st {
		out[i] = p.FrameAt(fi)
	}
	return out
}

// period returns the ns of CPU time sample s stands for: its Period, else
// 1e9/frequency of the recording, else 1 (times the samples a merged
// Sample stands for).
func period(p *profile.Profile, s profile.Sample) uint64 {
	if s.Period > 0 {
		return s.Period
	}
	return defaultPeriod(p) * uint64(s.N())
}

func defaultPeriod(p *profile.Profile) uint64 {
	for _, m := range p.Metas {
		if m.Frequency > 0 {
			return uint64(1e9 / m.Frequency)
		}
	}
	return 1
}

// commandName names the profile: the recorded command or attached process.
func commandName(p *profile.Profile) string {
	for _, m := range p.Metas {
		if len(m.Command) > 0 {
			return strings.Join(m.Command, " ")
		}
		if m.AttachPID > 0 {
			return fmt.Sprintf("pid %d", m.AttachPID)
		}
	}
	return "culprit profile"
}

// timeRange returns the smallest sample time and the largest time+period.
func timeRange(p *profile.Profile) (first, end uint64, ok bool) {
	for i, s := range p.Samples {
		e := p.LastTime(i) + period(p, s)/uint64(s.N())
		if i == 0 || s.Time < first {
			first = s.Time
		}
		if i == 0 || e > end {
			end = e
		}
	}
	return first, end, len(p.Samples) > 0
}

// origin is the time that exports count from: StartTime, or the first sample.
func origin(p *profile.Profile) uint64 {
	first, _, ok := timeRange(p)
	if p.StartTime != 0 && (!ok || p.StartTime <= first) {
		return p.StartTime
	}
	return first
}

// threadID is a thread of a timeline.
type threadID struct{ pid, tid uint32 }

func threadLess(a, b threadID) bool {
	if a.pid != b.pid {
		return a.pid < b.pid
	}
	return a.tid < b.tid
}

// samplesByThread returns the threads of p's samples in order of pid and
// tid, and for each its samples' indices in p.Samples, in p's order: four
// bytes a sample, where a timeline would otherwise copy its samples thread
// by thread.
func samplesByThread(p *profile.Profile) ([]threadID, [][]int32) {
	number := map[threadID]int32{}
	var (
		threads []threadID
		counts  []int32
	)
	for i := range p.Samples {
		s := &p.Samples[i]
		t := threadID{s.PID, s.TID}
		n, ok := number[t]
		if !ok {
			n = int32(len(threads))
			number[t] = n
			threads = append(threads, t)
			counts = append(counts, 0)
		}
		counts[n]++
	}
	sorted := slices.Clone(threads)
	sort.Slice(sorted, func(i, j int) bool { return threadLess(sorted[i], sorted[j]) })
	order := make([]int32, len(p.Samples))
	next := make([]int32, len(threads)) // by number: where its next index goes
	samples := make([][]int32, len(sorted))
	at := int32(0)
	for i, t := range sorted {
		n := number[t]
		next[n] = at
		samples[i] = order[at : at+counts[n]]
		at += counts[n]
	}
	for i := range p.Samples {
		s := &p.Samples[i]
		n := number[threadID{s.PID, s.TID}]
		order[next[n]] = int32(i)
		next[n]++
	}
	return sorted, samples
}
