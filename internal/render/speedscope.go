package render

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/culprit-dev/culprit/internal/profile"
)

// SpeedscopeSchema is the schema URL speedscope files name.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

type ssFrame struct {
	Name string `json:"name"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

type ssProfile struct {
	Type       string   `json:"type"`
	Name       string   `json:"name"`
	Unit       string   `json:"unit"`
	StartValue uint64   `json:"startValue"`
	EndValue   uint64   `json:"endValue"`
	Samples    [][]int  `json:"samples"`
	Weights    []uint64 `json:"weights"`
	stackCache map[int32][]int
}

type ssFile struct {
	Schema             string       `json:"$schema"`
	Shared             ssShared     `json:"shared"`
	Profiles           []*ssProfile `json:"profiles"`
	Name               string       `json:"name"`
	ActiveProfileIndex int          `json:"activeProfileIndex"`
	Exporter           string       `json:"exporter"`
}

type ssShared struct {
	Frames []ssFrame `json:"frames"`
}

// WriteSpeedscope writes p in speedscope's file format: shared frames
// {name, file, line} (one per distinct name, file and line; kernel frames
// have " [k]" appended to their name), and one "sampled" profile per thread,
// named "comm (pid P, tid T)", in order of pid and tid, whose samples are
// frame index lists root first and whose weights are the samples' periods in
// nanoseconds. A profile's startValue is its first sample's time from the
// profile's start, its endValue startValue plus the sum of its weights.
func WriteSpeedscope(w io.Writer, p *profile.Profile) error {
	out := ssFile{
		Schema:   SpeedscopeSchema,
		Shared:   ssShared{Frames: []ssFrame{}},
		Profiles: []*ssProfile{},
		Name:     commandName(p),
		Exporter: "culprit",
	}
	frameIdx := map[ssFrame]int{}
	frameOf := func(f profile.Frame) int {
		k := ssFrame{Name: f.Name(), File: f.File, Line: f.Line}
		if f.Kernel {
			k.Name += " [k]"
		}
		i, ok := frameIdx[k]
		if !ok {
			i = len(out.Shared.Frames)
			frameIdx[k] = i
			out.Shared.Frames = append(out.Shared.Frames, k)
		}
		return i
	}
	type thread struct{ pid, tid uint32 }
	byThread := map[thread]*ssProfile{}
	var threads []thread
	org := origin(p)
	for _, s := range p.Samples {
		t := thread{s.PID, s.TID}
		sp := byThread[t]
		if sp == nil {
			sp = &ssProfile{
				Type:       "sampled",
				Name:       fmt.Sprintf("%s (pid %d, tid %d)", p.ThreadName(s.TID), s.PID, s.TID),
				Unit:       "nanoseconds",
				StartValue: s.Time - org,
				Samples:    [][]int{},
				Weights:    []uint64{},
				stackCache: map[int32][]int{},
			}
			byThread[t] = sp
			threads = append(threads, t)
		}
		idx, ok := sp.stackCache[s.Stack]
		if !ok {
			frames := stackFrames(p, s.Stack)
			idx = make([]int, len(frames))
			for i, f := range frames {
				idx[len(frames)-1-i] = frameOf(f)
			}
			sp.stackCache[s.Stack] = idx
		}
		wt := period(p, s)
		sp.Samples = append(sp.Samples, idx)
		sp.Weights = append(sp.Weights, wt)
		sp.EndValue += wt
	}
	sort.Slice(threads, func(i, j int) bool {
		if threads[i].pid != threads[j].pid {
			return threads[i].pid < threads[j].pid
		}
		return threads[i].tid < threads[j].tid
	})
	for _, t := range threads {
		sp := byThread[t]
		sp.EndValue += sp.StartValue
		out.Profiles = append(out.Profiles, sp)
	}
	return json.NewEncoder(w).Encode(out)
}
