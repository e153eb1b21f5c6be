package loader

import (
	"slices"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// TestSyscallWindows: a recording's system call windows reach the
// profile, loaded whole or streamed, and through a selection (Apply).
func TestSyscallWindows(t *testing.T) {
	ws := []recording.SyscallWindow{{Start: 5, End: 200}, {Start: 200, End: 210, On: 10, Period: 100}, {Start: 300, End: 310, On: 10, Period: 100}}
	recs := []recording.Record{&recording.Meta{Frequency: 1000, Extra: map[string]string{recording.ExtraSyscallWindows: "10ms/100ms>20000"}}}
	for i := range ws {
		recs = append(recs, &ws[i])
	}
	recs = append(recs, &recording.Stack{ID: 1, Kernel: []uint64{0xffffffff81000010}},
		&recording.Sample{Time: 10, PID: 1, TID: 1, Period: 1, StackID: 1}, &recording.End{Time: 400})
	path := writeRec(t, recs...)
	for _, stream := range []bool{false, true} {
		p, err := Load([]string{path}, Options{Stream: stream})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []*profile.Profile{p, p.Apply(profile.Filter{AllEvents: true})} {
			if !slices.Equal(q.SyscallWindows, ws) {
				t.Errorf("stream %v: windows %+v, want %+v", stream, q.SyscallWindows, ws)
			}
		}
	}
}
