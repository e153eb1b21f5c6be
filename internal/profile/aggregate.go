package profile

import (
	"fmt"
	"math"
	"sort"
	"strings"
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

// labels returns the labels of the sample's stack, innermost first; an empty
// stack is ["[unknown]"].
func (p *Profile) labels(stack int32, g Grouping, cache map[int32]string) ([]string, []string) {
	st := p.StackAt(stack)
	if len(st) == 0 {
		return []string{Unknown}, []string{Unknown}
	}
	names := make([]string, len(st))
	objs := make([]string, len(st))
	for i, fi := range st {
		fr := p.FrameAt(fi)
		l, ok := cache[fi]
		if !ok {
			l = fr.Label(g)
			cache[fi] = l
		}
		names[i] = l
		objs[i] = fr.ObjectName()
	}
	return names, objs
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
	fl := Flat{Samples: len(p.Samples), Lost: p.Lost, Throttled: p.Throttled, Grouping: g}
	if !g.PerFrame() {
		fl.Rows = p.taskRows(g == ByThread)
		return fl
	}
	type counts struct{ self, total int }
	acc := map[rowKey]*counts{}
	get := func(k rowKey) *counts {
		c := acc[k]
		if c == nil {
			c = &counts{}
			acc[k] = c
		}
		return c
	}
	cache := map[int32]string{}
	// Samples sharing a stack give the same answer: count stacks first.
	perStack := map[int32]int{}
	for _, s := range p.Samples {
		perStack[s.Stack]++
	}
	seen := map[rowKey]bool{}
	for st, n := range perStack {
		names, objs := p.labels(st, g, cache)
		get(rowKey{names[0], objs[0]}).self += n
		clear(seen)
		for i := range names {
			k := rowKey{names[i], objs[i]}
			if seen[k] {
				continue
			}
			seen[k] = true
			get(k).total += n
		}
	}
	N := fl.Samples
	for k, c := range acc {
		fl.Rows = append(fl.Rows, FlatRow{
			Name: k.name, Object: k.object,
			Self: c.self, Total: c.total,
			SelfFrac: frac(c.self, N), TotalFrac: frac(c.total, N),
			SelfErr: Err(c.self, N), TotalErr: Err(c.total, N),
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
	for _, s := range p.Samples {
		k := key{s.PID, ""}
		if threads {
			k = key{s.TID, p.ThreadNameAt(s.TID, s.Time)}
		} else {
			k.name = p.ProcessNameAt(s.PID, s.TID, s.Time)
		}
		counts[k]++
	}
	N := len(p.Samples)
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
	cache := map[int32]string{}
	perStack := map[int32]int{}
	for _, s := range p.Samples {
		perStack[s.Stack]++
	}
	type entry struct {
		path []string
		n    int
	}
	acc := map[string]*entry{}
	for st, c := range perStack {
		names, _ := p.labels(st, g, cache)
		if n > 0 && len(names) > n {
			names = names[:n]
		}
		k := strings.Join(names, "\x00")
		e := acc[k]
		if e == nil {
			e = &entry{path: names}
			acc[k] = e
		}
		e.n += c
	}
	N := len(p.Samples)
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
