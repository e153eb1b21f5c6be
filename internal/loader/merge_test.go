package loader

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// mergeRec writes a recording of hier.c's functions: two processes, three
// threads, two CPUs, CPU ticks and syscall entries, stacks shared between
// threads, out of time order as rings are drained CPU by CPU. With rename, a
// Comm record renames thread 12 at time 5000, in the middle of its samples.
// Stack ids are idBase+1 to idBase+5: small ones as writers number them,
// or large ones as a file from elsewhere may have.
func mergeRec(t *testing.T, rename bool, idBase uint64) string {
	bin, offs, bid := hierFuncs(t)
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x555555554000
	recs := []recording.Record{
		&recording.Meta{Frequency: 1000},
		&recording.Comm{Time: 1, PID: 11, TID: 11, Exec: true, Name: "hier"},
		&recording.Mmap{Time: 1, PID: 11, TID: 11, Start: base, Len: uint64(st.Size()), Path: bin, BuildID: bid},
		&recording.Comm{Time: 2, PID: 11, TID: 12, Name: "hier"},
		&recording.Comm{Time: 3, PID: 21, TID: 21, Exec: true, Name: "other"},
		&recording.Mmap{Time: 3, PID: 21, TID: 21, Start: base, Len: uint64(st.Size()), Path: bin, BuildID: bid},
	}
	leaf := func(fn string, d uint64) uint64 { return base + offs[fn] + d }
	ret := func(fn string) uint64 { return base + offs[fn] + 9 }
	stacks := [][]uint64{
		{leaf("worker", 4), ret("dispatch_1"), ret("main")},
		{leaf("worker", 8), ret("dispatch_2"), ret("main")},
		{leaf("dispatch_2", 2), ret("main")},
		{leaf("main", 1)},
	}
	for i, s := range stacks {
		recs = append(recs, &recording.Stack{ID: idBase + uint64(i+1), User: s})
	}
	recs = append(recs, &recording.Stack{ID: idBase + 5, Kernel: []uint64{0xffffffff81000010}, User: stacks[0]})
	rng := rand.New(rand.NewPCG(1, 2))
	tasks := [][2]uint32{{11, 11}, {11, 12}, {21, 21}}
	var samples []recording.Record
	for i := range 4000 {
		task := tasks[rng.IntN(len(tasks))]
		s := &recording.Sample{Time: uint64(100 + 2*i), PID: task[0], TID: task[1], CPU: uint32(rng.IntN(2)),
			Period: uint64(900 + rng.IntN(200)), StackID: idBase + uint64(1+rng.IntN(5))}
		if rng.IntN(10) == 0 {
			s.Event, s.Arg = recording.EventSyscallEnter, uint64(rng.IntN(3))
		}
		samples = append(samples, s)
	}
	// Drained in blocks of 100, each block's later half first.
	for i := 0; i < len(samples); i += 100 {
		recs = append(recs, samples[i+50:i+100]...)
		recs = append(recs, samples[i:i+50]...)
		if rename && i == 2400 {
			recs = append(recs, &recording.Comm{Time: 5000, PID: 11, TID: 12, Name: "renamed"})
		}
	}
	recs = append(recs, &recording.End{Time: 9000})
	return writeRec(t, recs...)
}

// views renders what the aggregating views of a profile say, for comparing
// merged and unmerged loads.
func views(p *profile.Profile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "samples %d start %d\n", p.SampleCount(), p.StartTime)
	var period uint64
	for _, s := range p.Samples {
		period += s.Period
	}
	fmt.Fprintf(&b, "period %d\n", period)
	for _, g := range []profile.Grouping{profile.ByFunction, profile.ByLine, profile.ByObject, profile.ByProcess, profile.ByThread} {
		fmt.Fprintf(&b, "%v %+v\n", g, p.Flat(g))
	}
	fmt.Fprintf(&b, "callers %+v\n", p.Callers(profile.ByFunction, 2))
	var tree func(n *profile.TreeNode, depth int)
	tree = func(n *profile.TreeNode, depth int) {
		fmt.Fprintf(&b, "%s%s %d\n", strings.Repeat(" ", depth), n.Name, n.Samples)
		for _, c := range n.BySamples() {
			tree(c, depth+1)
		}
	}
	tree(p.CallTree(true), 0)
	for _, pk := range p.Peeks(regexp.MustCompile("worker")) {
		fmt.Fprintf(&b, "peek %+v\n", pk)
	}
	return b.String()
}

func TestMergeSameViews(t *testing.T) {
	for _, c := range []struct {
		rename bool
		idBase uint64
	}{{false, 0}, {true, 0}, {false, 1 << 40}, {true, 1 << 40}} {
		rename := c.rename
		t.Run(fmt.Sprintf("rename=%v,ids=%d+", rename, c.idBase), func(t *testing.T) {
			path := mergeRec(t, rename, c.idBase)
			full, err := Load([]string{path}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			merged, err := Load([]string{path}, Options{Merge: true})
			if err != nil {
				t.Fatal(err)
			}
			if full.Merged || len(full.Samples) != 4000 || full.SampleCount() != 4000 {
				t.Fatalf("unmerged: merged=%v, %d samples", full.Merged, len(full.Samples))
			}
			// A rename inside the samples of a group makes Load read the
			// file unmerged; otherwise at most 3 threads × 5 stacks × 4
			// events are left.
			if rename {
				if merged.Merged || len(merged.Samples) != 4000 {
					t.Errorf("renamed thread: merged=%v with %d samples, want the unmerged load", merged.Merged, len(merged.Samples))
				}
			} else if !merged.Merged || len(merged.Samples) > 3*5*4 {
				t.Errorf("merged=%v with %d samples", merged.Merged, len(merged.Samples))
			}
			for i := 1; i < len(merged.Samples); i++ {
				if merged.Samples[i].Time < merged.Samples[i-1].Time {
					t.Fatalf("merged samples not in order of their first time at %d", i)
				}
			}
			for _, f := range []profile.Filter{{}, {AllEvents: true}, {Kernel: profile.KernelExclude}, {Comms: []string{"other"}},
				{TIDs: []uint32{12}, Hide: regexp.MustCompile("dispatch")}, {Focus: regexp.MustCompile("dispatch_2")}} {
				a, b := views(full.Apply(f)), views(merged.Apply(f))
				if a != b {
					t.Errorf("filter %+v: merged views differ:\n%s\nunmerged:\n%s", f, b, a)
				}
			}
			if rename {
				names := map[string]int{}
				for _, r := range full.Flat(profile.ByThread).Rows {
					names[r.Name] = r.Self
				}
				if names["renamed[12]"] == 0 || names["hier[12]"] == 0 {
					t.Errorf("thread 12 rows %v: want both names", names)
				}
			}
		})
	}
}

// Merging keeps the order-free facts of each sample: the same multiset of
// (stack frames, task, event, argument) with their counts and periods.
func TestMergeKeepsSampleFacts(t *testing.T) {
	path := mergeRec(t, false, 0)
	full, err := Load([]string{path}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	merged, err := Load([]string{path}, Options{Merge: true})
	if err != nil {
		t.Fatal(err)
	}
	type fact struct {
		stack    string
		pid, tid uint32
		event    recording.Event
		arg      uint64
	}
	type sum struct {
		n      int
		period uint64
		first  uint64
	}
	collect := func(p *profile.Profile) map[fact]sum {
		out := map[fact]sum{}
		for _, s := range p.Samples {
			k := fact{fmt.Sprint(p.StackAt(s.Stack)), s.PID, s.TID, s.Event, s.Arg}
			v, ok := out[k]
			if !ok || s.Time < v.first {
				v.first = s.Time
			}
			v.n += s.N()
			v.period += s.Period
			out[k] = v
		}
		return out
	}
	if a, b := collect(full), collect(merged); !reflect.DeepEqual(a, b) {
		t.Errorf("merged facts differ:\n%v\nunmerged:\n%v", b, a)
	}
}
