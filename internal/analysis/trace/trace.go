// Package trace summarises traced calls (culprit trace): per function the
// number of calls and the distribution of their inclusive and exclusive
// durations, by caller; the slowest calls of a function with their
// arguments decoded; and two traced runs compared per function. It reads
// the profile model and returns results; it does not print.
package trace

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Dist summarises durations in ns.
type Dist struct {
	Total uint64  `json:"total_ns"`
	Mean  float64 `json:"mean_ns"`
	Min   uint64  `json:"min_ns"`
	P50   uint64  `json:"p50_ns"`
	P99   uint64  `json:"p99_ns"`
	Max   uint64  `json:"max_ns"`
	// Q1, Median and Q3 are the quartiles by linear interpolation
	// (numpy's default, as Perun's Dynamic Stats have them).
	Q1     float64 `json:"q1_ns"`
	Median float64 `json:"median_ns"`
	Q3     float64 `json:"q3_ns"`
}

func dist(v []uint64) Dist {
	if len(v) == 0 {
		return Dist{}
	}
	slices.Sort(v)
	var d Dist
	for _, x := range v {
		d.Total += x
	}
	d.Mean = float64(d.Total) / float64(len(v))
	d.Min, d.Max = v[0], v[len(v)-1]
	d.P50 = rank(v, 0.50)
	d.P99 = rank(v, 0.99)
	d.Q1, d.Median, d.Q3 = quantile(v, 0.25), quantile(v, 0.5), quantile(v, 0.75)
	return d
}

// rank is the nearest-rank percentile of sorted v.
func rank(v []uint64, q float64) uint64 {
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}

// Caller is the calls of a function from one caller.
type Caller struct {
	Name  string `json:"name"`
	Calls int    `json:"calls"`
	Incl  Dist   `json:"inclusive"`
	Excl  Dist   `json:"exclusive"`
}

// Function is what the calls of one traced function add up to.
type Function struct {
	Name   string `json:"function"`
	Object string `json:"object"`
	// Calls is the number of calls recorded; with every-N-th sampling
	// Estimated is Perun's estimate of the calls made,
	// Calls + (Calls−1)·(N−1) (the first call is always recorded).
	Calls      int      `json:"calls"`
	Every      uint32   `json:"every,omitempty"`
	Estimated  uint64   `json:"estimated_calls"`
	Unreturned int      `json:"unreturned,omitempty"` // left by longjmp, unwinding or exit
	Unwound    int      `json:"unwound,omitempty"`    // of those, left by an exception or panic (seen at its catch or clean-up)
	Incl       Dist     `json:"inclusive"`
	Excl       Dist     `json:"exclusive"`
	Callers    []Caller `json:"callers,omitempty"`
	// OnCPU says Incl and Excl (and the callers') are the calls' times on
	// the CPU (FunctionsCPU), not their wall durations.
	OnCPU bool `json:"on_cpu,omitempty"`
}

// CallerName names where a call was made from: the function containing
// its call site, else its nearest traced caller, else "[unknown]".
func CallerName(p *profile.Profile, c *profile.Call) string {
	if c.Site >= 0 && int(c.Site) < len(p.Frames) {
		if f := p.Frames[c.Site].Function; f != "" {
			return f
		}
	}
	if c.Caller >= 0 && int(c.Caller) < len(p.Probes) {
		return p.Probes[c.Caller].Function
	}
	return "[unknown]"
}

// Functions summarises each traced function with calls, the largest
// exclusive total first; with byCaller each also by caller, the largest
// inclusive total first.
func Functions(p *profile.Profile, byCaller bool) []Function {
	return functions(p, byCaller, false)
}

// FunctionsCPU is Functions by the calls' time on the CPU: without the
// time their thread was preempted, blocked or asleep (and, exclusive,
// without their traced callees' on-CPU time). A function some of whose
// returned calls have no on-CPU time (recorded with --no-cpu-time or
// before the tracer measured it, a Go call that came back on another
// thread) keeps its wall durations, with OnCPU false. Calls that did not
// return, and calls whose on-CPU time was lost (a context switch went
// unseen), have none: they are counted, not in the distributions.
func FunctionsCPU(p *profile.Profile, byCaller bool) []Function {
	return functions(p, byCaller, true)
}

// cpuKnown says, per probe, whether each of its returned calls has its
// on-CPU time, and it has at least one.
func cpuKnown(p *profile.Profile) []bool {
	ok := make([]bool, len(p.Probes))
	bad := make([]bool, len(p.Probes))
	for i := range p.Calls {
		c := &p.Calls[i]
		switch {
		case c.HasCPU():
			ok[c.Probe] = true
		case !c.Unreturned() && !c.CPULost():
			bad[c.Probe] = true
		}
	}
	for i := range ok {
		ok[i] = ok[i] && !bad[i]
	}
	return ok
}

func functions(p *profile.Profile, byCaller, cpu bool) []Function {
	var onCPU []bool
	if cpu {
		onCPU = cpuKnown(p)
	}
	type acc struct {
		incl, excl []uint64
		unret      int
		unwound    int
		callers    map[string]*[2][]uint64
	}
	accs := make([]acc, len(p.Probes))
	calls := make([]int, len(p.Probes))
	for i := range p.Calls {
		calls[p.Calls[i].Probe]++
	}
	for i, n := range calls {
		// Sized first: a function of millions of calls otherwise
		// copies its durations over and over as they grow.
		accs[i].incl, accs[i].excl = make([]uint64, 0, n), make([]uint64, 0, n)
	}
	for i := range p.Calls {
		c := &p.Calls[i]
		a := &accs[c.Probe]
		if c.Unreturned() {
			a.unret++
		}
		if c.Unwound() {
			a.unwound++
		}
		incl, excl := c.Inclusive(), c.Exclusive()
		if onCPU != nil && onCPU[c.Probe] {
			if !c.HasCPU() {
				continue // did not return, or lost: no time on the CPU
			}
			incl, excl = c.InclusiveCPU(), c.ExclusiveCPU()
		}
		a.incl = append(a.incl, incl)
		a.excl = append(a.excl, excl)
		if byCaller {
			if a.callers == nil {
				a.callers = map[string]*[2][]uint64{}
			}
			name := CallerName(p, c)
			v := a.callers[name]
			if v == nil {
				v = &[2][]uint64{}
				a.callers[name] = v
			}
			v[0] = append(v[0], incl)
			v[1] = append(v[1], excl)
		}
	}
	var out []Function
	for i, pr := range p.Probes {
		a := &accs[i]
		if calls[i] == 0 {
			continue
		}
		f := Function{Name: pr.Function, Object: pr.Object, Calls: calls[i], Unreturned: a.unret, Unwound: a.unwound,
			Incl: dist(a.incl), Excl: dist(a.excl), Estimated: uint64(calls[i]), OnCPU: onCPU != nil && onCPU[i]}
		if pr.Every > 1 {
			f.Every = pr.Every
			f.Estimated = uint64(f.Calls) + uint64(f.Calls-1)*uint64(pr.Every-1)
		}
		for name, v := range a.callers {
			f.Callers = append(f.Callers, Caller{Name: name, Calls: len(v[0]), Incl: dist(v[0]), Excl: dist(v[1])})
		}
		sort.Slice(f.Callers, func(i, j int) bool {
			if f.Callers[i].Incl.Total != f.Callers[j].Incl.Total {
				return f.Callers[i].Incl.Total > f.Callers[j].Incl.Total
			}
			return f.Callers[i].Name < f.Callers[j].Name
		})
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Excl.Total != out[j].Excl.Total {
			return out[i].Excl.Total > out[j].Excl.Total
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Arg is one decoded argument.
type Arg struct {
	Name  string `json:"name"`
	Type  string `json:"type,omitempty"`
	Value string `json:"value"`
}

// CallInfo is one call as the slowest-calls list shows it.
type CallInfo struct {
	Function string  `json:"function"`
	Start    float64 `json:"start_s"` // seconds from the profile's start
	Incl     uint64  `json:"inclusive_ns"`
	Excl     uint64  `json:"exclusive_ns"`
	// InclCPU and ExclCPU are the same on the CPU: without the time the
	// thread was preempted, blocked or asleep (nil when not measured).
	InclCPU    *uint64 `json:"inclusive_cpu_ns,omitempty"`
	ExclCPU    *uint64 `json:"exclusive_cpu_ns,omitempty"`
	PID        uint32  `json:"pid"`
	TID        uint32  `json:"tid"`
	Depth      uint32  `json:"depth"`
	Caller     string  `json:"caller"`
	Args       []Arg   `json:"args,omitempty"`
	Ret        string  `json:"ret,omitempty"`
	Unreturned bool    `json:"unreturned,omitempty"`
	// Unwound: of the calls that did not return, one a C++ exception or
	// Rust panic left (it ended at the catch or clean-up it reached).
	Unwound bool `json:"unwound,omitempty"`
	// CPULost: the time on the CPU was being measured but one of the
	// thread's context switches in the call went unseen, or the
	// recording has the call off the CPU for all its duration.
	CPULost bool `json:"cpu_lost,omitempty"`
}

// Args decodes a call's arguments by its probe's parameters; without
// them, by register (arg1..arg6, hexadecimal).
func Args(pr *profile.Probe, c *profile.Call) []Arg {
	var out []Arg
	strs := 0 // char * parameters seen
	for i, v := range c.Args {
		if len(pr.Params) > 0 {
			if i >= len(pr.Params) {
				break
			}
			parts := strings.SplitN(pr.Params[i], ":", 3)
			if len(parts) != 3 {
				break
			}
			val := Format(v, parts[1])
			if parts[1] == "s8" {
				if strs < len(c.Strs) {
					val = CString(v, c.Strs[strs])
				}
				strs++
			}
			out = append(out, Arg{Name: parts[0], Type: parts[2], Value: val})
			continue
		}
		out = append(out, Arg{Name: "arg" + strconv.Itoa(i+1), Value: "0x" + strconv.FormatUint(v, 16)})
	}
	return out
}

// MaxString is the most bytes of a string argument the tracer copies.
const MaxString = 63

// CString shows a char * argument: NULL, or the string its pointer v
// pointed to, quoted and escaped as Go does, with … when it was cut at
// MaxString bytes.
func CString(v uint64, s string) string {
	if v == 0 {
		return "NULL"
	}
	q := strconv.Quote(s)
	if len(s) >= MaxString {
		q += "…"
	}
	return q
}

// Ret renders a call's return value by the return type its probe
// recorded, else as a signed decimal; "" for a void function; for a
// floating-point result, which is not recorded (recording.RetUnread),
// the type and "not recorded".
func Ret(pr *profile.Probe, c *profile.Call) string {
	if pr.Ret == recording.RetVoid {
		return ""
	}
	if code, typ, ok := strings.Cut(pr.Ret, ":"); ok {
		if code == recording.RetUnread {
			return "(" + typ + ", not recorded)"
		}
		return Format(c.Ret, code)
	}
	return strconv.FormatInt(int64(c.Ret), 10)
}

// Format renders a register value by a parameter code: i or u and a size
// in bytes, p8 (pointer), b1 (bool).
func Format(v uint64, code string) string {
	if len(code) < 2 {
		return "0x" + strconv.FormatUint(v, 16)
	}
	size, err := strconv.Atoi(code[1:])
	if err != nil || size < 1 || size > 8 {
		return "0x" + strconv.FormatUint(v, 16)
	}
	bits := uint(size * 8)
	if bits < 64 {
		v &= 1<<bits - 1
	}
	switch code[0] {
	case 'i':
		x := int64(v)
		if bits < 64 {
			x = int64(v<<(64-bits)) >> (64 - bits)
		}
		return strconv.FormatInt(x, 10)
	case 'u':
		return strconv.FormatUint(v, 10)
	case 'b':
		return strconv.FormatBool(v != 0)
	}
	return "0x" + strconv.FormatUint(v, 16)
}

// Numeric is the value of a call's i-th argument v as a number, when its
// probe recorded the parameter as an integer or bool (codes i, u, b); not
// for pointers or undecoded registers.
func Numeric(v uint64, params []string, i int) (float64, bool) {
	if i >= len(params) {
		return 0, false
	}
	parts := strings.SplitN(params[i], ":", 3)
	if len(parts) != 3 || len(parts[1]) < 2 {
		return 0, false
	}
	switch parts[1][0] {
	case 'i', 'u', 'b':
	default:
		return 0, false
	}
	x, err := strconv.ParseFloat(Format(v, parts[1]), 64)
	if err != nil {
		if b, err := strconv.ParseBool(Format(v, parts[1])); err == nil {
			if b {
				return 1, true
			}
			return 0, true
		}
		return 0, false
	}
	return x, true
}

// Slowest returns the n slowest calls (by inclusive time; 0: all) of the
// functions whose names match re, slowest first.
func Slowest(p *profile.Profile, re *regexp.Regexp, n int) []CallInfo {
	var idx []int
	for i := range p.Calls {
		if re.MatchString(p.Probes[p.Calls[i].Probe].Function) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return p.Calls[idx[a]].Inclusive() > p.Calls[idx[b]].Inclusive() })
	if n > 0 && len(idx) > n {
		idx = idx[:n]
	}
	out := make([]CallInfo, 0, len(idx))
	for _, i := range idx {
		c := &p.Calls[i]
		pr := &p.Probes[c.Probe]
		ci := CallInfo{Function: pr.Function, Start: float64(c.Start-p.StartTime) / 1e9, Incl: c.Inclusive(), Excl: c.Exclusive(),
			PID: c.PID, TID: c.TID, Depth: c.Depth, Caller: CallerName(p, c), Args: Args(pr, c), Unreturned: c.Unreturned(), Unwound: c.Unwound(), CPULost: c.CPULost()}
		if c.HasCPU() {
			in, ex := c.InclusiveCPU(), c.ExclusiveCPU()
			ci.InclCPU, ci.ExclCPU = &in, &ex
		}
		if len(c.Args) > 0 && !c.Unreturned() && c.Flags&(recording.CallPoint|recording.CallTailJumped) == 0 {
			ci.Ret = Ret(pr, c) // a point hit has no return value, nor a call that ended in a tail call
		}
		out = append(out, ci)
	}
	return out
}

// Change compares one function's calls in two runs.
type Change struct {
	Name string   `json:"function"`
	A    Function `json:"a"`
	B    Function `json:"b"`
	// MeanRatio is B's mean inclusive time over A's (0 when either run
	// has no call of it).
	MeanRatio float64 `json:"mean_ratio"`
	// OnCPU says both sides are compared by their calls' time on the CPU;
	// false: by wall durations.
	OnCPU bool `json:"on_cpu"`
}

// Diff compares the traced functions of two runs by name, the largest
// change of exclusive total first. With cpu, a function is compared by
// its calls' time on the CPU where both runs measured it for every
// returned call (FunctionsCPU), else by wall durations; without, always
// by wall durations.
func Diff(a, b *profile.Profile, cpu bool) []Change {
	fa, fb := Functions(a, false), Functions(b, false)
	if cpu {
		ca, cb := FunctionsCPU(a, false), FunctionsCPU(b, false)
		ok := map[string]bool{}
		for _, f := range ca {
			ok[f.Name] = f.OnCPU
		}
		for _, f := range cb {
			if v, seen := ok[f.Name]; seen {
				ok[f.Name] = v && f.OnCPU
			} else {
				ok[f.Name] = f.OnCPU
			}
		}
		pick := func(cpuF, wallF []Function) []Function {
			out := make([]Function, len(wallF))
			copy(out, wallF)
			byCPU := map[string]Function{}
			for _, f := range cpuF {
				byCPU[f.Name] = f
			}
			for i := range out {
				if f, found := byCPU[out[i].Name]; found && ok[f.Name] {
					out[i] = f
				}
			}
			return out
		}
		fa, fb = pick(ca, fa), pick(cb, fb)
	}
	byName := map[string]*Change{}
	var names []string
	for _, f := range fa {
		if _, ok := byName[f.Name]; !ok {
			names = append(names, f.Name)
			byName[f.Name] = &Change{Name: f.Name}
		}
		byName[f.Name].A = f
	}
	for _, f := range fb {
		if _, ok := byName[f.Name]; !ok {
			names = append(names, f.Name)
			byName[f.Name] = &Change{Name: f.Name}
		}
		byName[f.Name].B = f
	}
	out := make([]Change, 0, len(names))
	for _, n := range names {
		c := byName[n]
		if c.A.Calls > 0 && c.B.Calls > 0 && c.A.Incl.Mean > 0 {
			c.MeanRatio = c.B.Incl.Mean / c.A.Incl.Mean
		}
		c.OnCPU = (c.A.Calls == 0 || c.A.OnCPU) && (c.B.Calls == 0 || c.B.OnCPU)
		out = append(out, *c)
	}
	delta := func(c Change) float64 { return math.Abs(float64(c.B.Excl.Total) - float64(c.A.Excl.Total)) }
	sort.SliceStable(out, func(i, j int) bool {
		if di, dj := delta(out[i]), delta(out[j]); di != dj {
			return di > dj
		}
		return out[i].Name < out[j].Name
	})
	return out
}
