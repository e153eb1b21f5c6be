package render

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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
// and the samples are read once, in time order, and kept thread by thread
// as a few bytes each (byThread). Strings go through
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
	stacks := map[int32][]byte{}          // a stack's frame indexes, root first, as JSON
	addStack := func(s *profile.Sample) { // frames numbered in the samples' order
		st := s.Stack
		if _, ok := stacks[st]; ok {
			return
		}
		fs := stackFrames(p, st)
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
		stacks[st] = append(b, ']')
	}
	ts, err := byThread(p, false, addStack)
	if err != nil {
		return err
	}
	defer ts.close()
	org := originOf(p, ts.first, ts.ok)
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
	for n, t := range ts.threads {
		l := ts.lists[n]
		if n > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(`{"type":"sampled","name":`)
		str(fmt.Sprintf("%s (pid %d, tid %d)", p.ThreadName(t.tid), t.pid, t.tid))
		start := l.startTime - org
		bw.WriteString(`,"unit":"nanoseconds","startValue":`)
		bw.Write(strconv.AppendUint(num[:0], start, 10))
		bw.WriteString(`,"endValue":`)
		bw.Write(strconv.AppendUint(num[:0], l.sum+start, 10))
		bw.WriteString(`,"samples":[`)
		sep := false
		if err := l.each(func(s tsample) {
			if sep {
				bw.WriteByte(',')
			}
			sep = true
			bw.Write(stacks[s.stack])
		}); err != nil {
			return err
		}
		bw.WriteString(`],"weights":[`)
		sep = false
		if err := l.each(func(s tsample) {
			if sep {
				bw.WriteByte(',')
			}
			sep = true
			num = strconv.AppendUint(num[:0], s.period, 10)
			bw.Write(num)
		}); err != nil {
			return err
		}
		l.buf = nil
		bw.WriteString(`]}`)
	}
	bw.WriteString(`],"name":`)
	str(commandName(p))
	bw.WriteString(`,"activeProfileIndex":0,"exporter":"culprit"}` + "\n")
	return bw.Flush()
}
