package render

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/culprit-dev/culprit/internal/profile"
)

// SpeedscopeSchema is the schema URL speedscope files name.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

type ssFrame struct {
	Name string `json:"name"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// ssProfile is the profile of one thread while it is made: its samples'
// stack ids and weights.
type ssProfile struct {
	name       string
	start, end uint64
	stacks     []int32
	weights    []uint64
}

// WriteSpeedscope writes p in speedscope's file format: shared frames
// {name, file, line} (one per distinct name, file and line; kernel frames
// have " [k]" appended to their name), and one "sampled" profile per thread,
// named "comm (pid P, tid T)", in order of pid and tid, whose samples are
// frame index lists root first and whose weights are the samples' periods in
// nanoseconds. A profile's startValue is its first sample's time from the
// profile's start, its endValue startValue plus the sum of its weights.
//
// The file is written as it is made rather than marshalled whole: each
// stack's frame list is encoded once and copied for each of its samples,
// and a thread's samples are kept as stack ids. Strings go through
// encoding/json, so the bytes are those json.Encoder would write.
func WriteSpeedscope(w io.Writer, p *profile.Profile) error {
	frames := []ssFrame{}
	frameIdx := map[ssFrame]int{}
	frameOf := func(f profile.Frame) int {
		k := ssFrame{Name: f.Name(), File: f.File, Line: f.Line}
		if f.Kernel {
			k.Name += " [k]"
		}
		i, ok := frameIdx[k]
		if !ok {
			i = len(frames)
			frameIdx[k] = i
			frames = append(frames, k)
		}
		return i
	}
	stacks := map[int32][]byte{} // a stack's frame indexes, root first, as JSON
	type thread struct{ pid, tid uint32 }
	byThread := map[thread]*ssProfile{}
	var threads []thread
	org := origin(p)
	for _, s := range p.Samples {
		t := thread{s.PID, s.TID}
		sp := byThread[t]
		if sp == nil {
			sp = &ssProfile{name: fmt.Sprintf("%s (pid %d, tid %d)", p.ThreadName(s.TID), s.PID, s.TID), start: s.Time - org}
			byThread[t] = sp
			threads = append(threads, t)
		}
		if _, ok := stacks[s.Stack]; !ok {
			fs := stackFrames(p, s.Stack)
			idx := make([]int, len(fs))
			for i, f := range fs { // innermost first, as frames are numbered
				idx[len(fs)-1-i] = frameOf(f)
			}
			b := []byte{'['}
			for i, fi := range idx {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(fi), 10)
			}
			stacks[s.Stack] = append(b, ']')
		}
		wt := period(p, s)
		sp.stacks = append(sp.stacks, s.Stack)
		sp.weights = append(sp.weights, wt)
		sp.end += wt
	}
	sort.Slice(threads, func(i, j int) bool {
		if threads[i].pid != threads[j].pid {
			return threads[i].pid < threads[j].pid
		}
		return threads[i].tid < threads[j].tid
	})
	bw := bufio.NewWriterSize(w, 256<<10)
	str := func(v any) {
		b, _ := json.Marshal(v) // strings and frames: cannot fail
		bw.Write(b)
	}
	bw.WriteString(`{"$schema":`)
	str(SpeedscopeSchema)
	bw.WriteString(`,"shared":{"frames":`)
	str(frames)
	bw.WriteString(`},"profiles":[`)
	var num []byte
	for n, t := range threads {
		sp := byThread[t]
		if n > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(`{"type":"sampled","name":`)
		str(sp.name)
		bw.WriteString(`,"unit":"nanoseconds","startValue":`)
		bw.Write(strconv.AppendUint(num[:0], sp.start, 10))
		bw.WriteString(`,"endValue":`)
		bw.Write(strconv.AppendUint(num[:0], sp.end+sp.start, 10))
		bw.WriteString(`,"samples":[`)
		for i, st := range sp.stacks {
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.Write(stacks[st])
		}
		bw.WriteString(`],"weights":[`)
		for i, wt := range sp.weights {
			if i > 0 {
				bw.WriteByte(',')
			}
			num = strconv.AppendUint(num[:0], wt, 10)
			bw.Write(num)
		}
		bw.WriteString(`]}`)
	}
	bw.WriteString(`],"name":`)
	str(commandName(p))
	bw.WriteString(`,"activeProfileIndex":0,"exporter":"culprit"}` + "\n")
	return bw.Flush()
}
