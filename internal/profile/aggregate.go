package profile

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
)

// FlatRow is one line of a flat profile. Self counts the samples whose
// innermost frame has this label; Total counts the samples with the label
// anywhere on the stack, once per sample. Fractions are of all samples of the
// profile; errors are two-sigma binomial errors of those fractions.
type FlatRow struct {
	Name      string // label under the report's grouping
	Object    string // basename of the object of the frames behind the label
	Self      int
	Total     int
	SelfFrac  float64
	TotalFrac float64
	SelfErr   float64
	TotalErr  float64
}

// Flat is a flat profile.
type Flat struct {
	Samples   int
	Lost      uint64
	Throttled uint64
	Grouping  Grouping
	Rows      []FlatRow
}

// Err returns the two-sigma error of the estimate n/total of a binomial
// proportion, as a fraction: 2·sqrt(p(1−p)/N) with p = n/N. This is PCT's
// error bound (§6.2): with N samples of which n hit a location, the count n
// is binomial with standard deviation sqrt(N·p·(1−p)), and the true share lies
// within two standard deviations of the estimate about 95% of the time.
// It is 0 when total is 0.
func Err(n, total int) float64 {
	if total <= 0 {
		return 0
	}
	p := float64(n) / float64(total)
	if p < 0 || p > 1 {
		return 0
	}
	return 2 * math.Sqrt(p*(1-p)/float64(total))
}

// Significant reports whether counts n1 and n2 of two locations in the same
// profile differ beyond sampling noise, by PCT's two-sigma rule: the
// difference n1−n2 of two counts from the same N samples has variance close
// to n1+n2 when both shares are small, so n1 is significantly larger than n2
// when n1−n2 > 2·sqrt(n1+n2). The test is one-sided: Significant(n2, n1)
// asks the converse.
func Significant(n1, n2 int) bool {
	if n1 < 0 || n2 < 0 {
		return false
	}
	return float64(n1-n2) > 2*math.Sqrt(float64(n1+n2))
}

func frac(n, total int) float64 {
	if total <= 0 {
		return 0
	}
	return float64(n) / float64(total)
}

// frameLabels names the frames of p under a grouping: each frame's label
// and object once, and an id per distinct (label, object), so that
// aggregating over many stacks costs slice lookups, not string work.
type frameLabels struct {
	p     *Profile
	g     Grouping
	id    []int32 // per frame: 1 + index in keys; 0 not yet known
	keys  []rowKey
	index map[rowKey]int32
}

func (p *Profile) frameLabels(g Grouping) *frameLabels {
	return &frameLabels{p: p, g: g, id: make([]int32, len(p.Frames)), index: map[rowKey]int32{}}
}

// of returns the index in keys of frame fi's label and object; an index out
// of range is "[unknown]".
func (fl *frameLabels) of(fi int32) int32 {
	if fi >= 0 && int(fi) < len(fl.id) && fl.id[fi] != 0 {
		return fl.id[fi] - 1
	}
	fr := fl.p.FrameAt(fi)
	k := rowKey{fr.Label(fl.g), fr.ObjectName()}
	i, ok := fl.index[k]
	if !ok {
		i = int32(len(fl.keys))
		fl.keys = append(fl.keys, k)
		fl.index[k] = i
	}
	if fi >= 0 && int(fi) < len(fl.id) {
		fl.id[fi] = i + 1
	}
	return i
}

// stack appends to buf the label indexes of stack st, innermost first; an
// empty stack is one "[unknown]" label.
func (fl *frameLabels) stack(st int32, buf []int32) []int32 {
	frames := fl.p.StackAt(st)
	if len(frames) == 0 {
		i, ok := fl.index[rowKey{Unknown, Unknown}]
		if !ok {
			i = int32(len(fl.keys))
			fl.keys = append(fl.keys, rowKey{Unknown, Unknown})
			fl.index[rowKey{Unknown, Unknown}] = i
		}
		return append(buf, i)
	}
	for _, fi := range frames {
		buf = append(buf, fl.of(fi))
	}
	return buf
}

// perStack counts the samples of each stack, as a slice when stack indexes
// are those of p.Stacks, else as a map.
func (p *Profile) perStack() (counts []int, other map[int32]int) {
	counts = make([]int, len(p.Stacks))
	// A streamed profile that cannot be read again has the samples read
	// so far (reading it failed for the command that streamed it).
	_ = p.EachSample(func(s *Sample) bool {
		if s.Stack >= 0 && int(s.Stack) < len(counts) {
			counts[s.Stack] += s.N()
			return true
		}
		if other == nil {
			other = map[int32]int{}
		}
		other[s.Stack] += s.N()
		return true
	})
	return counts, other
}

// eachStack calls f for every stack with samples, with their number.
func (p *Profile) eachStack(f func(st int32, n int)) {
	counts, other := p.perStack()
	for st, n := range counts {
		if n > 0 {
			f(int32(st), n)
		}
	}
	for st, n := range other {
		f(st, n)
	}
}

type rowKey struct{ name, object string }

// Flat returns the flat profile of p under grouping g: per label, the samples
// whose innermost frame has it (self) and the samples that have it anywhere on
// the stack (total; a label is counted once per sample, so recursion does not
// inflate it). Labels are told apart by object too, so two functions "main" of
// different executables are two rows. An empty stack counts as "[unknown]".
// Rows are sorted by self descending, then total descending, then name.
//
// Under ByProcess and ByThread the rows are the samples' processes
// ("comm[pid]") or threads ("comm[tid]"), self and total both counting the
// samples taken in them; a process that execs has a row per program.
func (p *Profile) Flat(g Grouping) Flat {
	fl := Flat{Samples: p.SampleCount(), Lost: p.Lost, Throttled: p.Throttled, Grouping: g}
	if !g.PerFrame() {
		fl.Rows = p.taskRows(g == ByThread)
		return fl
	}
	labels := p.frameLabels(g)
	var self, total []int
	seen := []int32{} // per label: the last stack that counted it, +1
	var buf []int32
	sti := int32(0)
	p.eachStack(func(st int32, n int) {
		buf = labels.stack(st, buf[:0])
		for len(self) < len(labels.keys) {
			self, total, seen = append(self, 0), append(total, 0), append(seen, 0)
		}
		sti++
		self[buf[0]] += n
		for _, li := range buf {
			if seen[li] != sti {
				seen[li] = sti
				total[li] += n
			}
		}
	})
	N := fl.Samples
	for i, k := range labels.keys {
		if i >= len(total) || total[i] == 0 {
			continue
		}
		fl.Rows = append(fl.Rows, FlatRow{
			Name: k.name, Object: k.object,
			Self: self[i], Total: total[i],
			SelfFrac: frac(self[i], N), TotalFrac: frac(total[i], N),
			SelfErr: Err(self[i], N), TotalErr: Err(total[i], N),
		})
	}
	sortRows(fl.Rows)
	return fl
}

// taskRows counts the samples of each process (or, with threads, of each
// thread), named "comm[pid]" ("comm[tid]") by the name it had at the sample:
// a process that execs has a row per program it ran.
func (p *Profile) taskRows(threads bool) []FlatRow {
	type key struct {
		id   uint32
		name string
	}
	counts := map[key]int{}
	_ = p.EachSample(func(s *Sample) bool { // as perStack
		k := key{s.PID, ""}
		if threads {
			k = key{s.TID, p.ThreadNameAt(s.TID, s.Time)}
		} else {
			k.name = p.ProcessNameAt(s.PID, s.TID, s.Time)
		}
		counts[k] += s.N()
		return true
	})
	N := p.SampleCount()
	rows := make([]FlatRow, 0, len(counts))
	for k, n := range counts {
		f, e := frac(n, N), Err(n, N)
		rows = append(rows, FlatRow{Name: fmt.Sprintf("%s[%d]", k.name, k.id), Self: n, Total: n,
			SelfFrac: f, TotalFrac: f, SelfErr: e, TotalErr: e})
	}
	sortRows(rows)
	return rows
}

// sortRows sorts flat rows by self descending, then total descending, then
// name and object.
func sortRows(rows []FlatRow) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Self != b.Self {
			return a.Self > b.Self
		}
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Object < b.Object
	})
}

// CallerRow is one call path of a hierarchical profile, leaf first.
type CallerRow struct {
	Path    []string // labels, innermost first, e.g. ["worker", "dispatch_2", "main"]
	Samples int
	Frac    float64 // of all samples of the profile
	Err     float64 // two-sigma binomial error of Frac
}

// Callers returns, for each sample, the innermost n labels of its stack under
// grouping g (leaf first; the whole stack when n <= 0), counted over all
// samples and sorted by count descending, then by path. Consecutive identical
// labels from recursion are kept: they are real frames. An empty stack is the
// path ["[unknown]"].
func (p *Profile) Callers(g Grouping, n int) []CallerRow {
	labels := p.frameLabels(g)
	type entry struct {
		path []string
		n    int
	}
	acc := map[string]*entry{}
	// Paths are of names alone: labels of one name in different objects
	// are one, so the key is made of name ids.
	nameIDs := map[string]uint64{}
	var nameOf []uint64 // per label: 1 + its name's id
	var buf []int32
	var key []byte
	p.eachStack(func(st int32, c int) {
		buf = labels.stack(st, buf[:0])
		if n > 0 && len(buf) > n {
			buf = buf[:n]
		}
		key = key[:0]
		for _, li := range buf {
			for len(nameOf) < len(labels.keys) {
				nameOf = append(nameOf, 0)
			}
			if nameOf[li] == 0 {
				name := labels.keys[li].name
				id, ok := nameIDs[name]
				if !ok {
					id = uint64(len(nameIDs))
					nameIDs[name] = id
				}
				nameOf[li] = id + 1
			}
			key = binary.AppendUvarint(key, nameOf[li]-1)
		}
		e := acc[string(key)]
		if e == nil {
			e = &entry{path: make([]string, len(buf))}
			for i, li := range buf {
				e.path[i] = labels.keys[li].name
			}
			acc[string(key)] = e
		}
		e.n += c
	})
	N := p.SampleCount()
	rows := make([]CallerRow, 0, len(acc))
	for _, e := range acc {
		rows = append(rows, CallerRow{Path: e.path, Samples: e.n, Frac: frac(e.n, N), Err: Err(e.n, N)})
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Samples != b.Samples {
			return a.Samples > b.Samples
		}
		return lessPath(a.Path, b.Path)
	})
	return rows
}

func lessPath(a, b []string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}
