// Command genvalues makes a normal and a buggy recording with value samples
// out of a real recording, for measuring culprit diagnose: it repeats the
// input's CPU samples (with their real stacks, shifted in time) and, at each,
// writes the values of a synthetic schema, as culprit record --values would:
// every function seen in the stacks has -vars variables (loop, cond, args
// tags and one pointer), read at depth 0 to 3 of the stack wherever the
// function appears, and -globals globals are read in the sampled frame. The
// values follow realistic shapes (uniform, bell-shaped, counters stepping
// through loops, rarely changing configuration values, pointers held for a
// while); in the buggy recording a few variables (-anomalous, a fraction)
// change shape: a wider range, a constant, or values held for longer.
//
//	go run ./bench/genvalues -values 10000000 in.rec normal.rec buggy.rec
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"sync"

	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/symbol"
)

func main() {
	values := flag.Int("values", 10000000, "value samples to write in both recordings together")
	vars := flag.Int("vars", 4, "variables per function")
	globals := flag.Int("globals", 16, "global variables")
	anomalous := flag.Float64("anomalous", 0.03, "fraction of variables that change shape in the buggy recording")
	depth := flag.Int("depth", 3, "caller frames whose variables are read")
	flag.Parse()
	if flag.NArg() != 3 {
		fmt.Fprintln(os.Stderr, "usage: genvalues [flags] IN.rec NORMAL.rec BUGGY.rec")
		os.Exit(2)
	}
	// The two recordings are written at once, each by a generator of
	// its own (the schema read once, its variables' state copied, the
	// random state too, so the buggy run's values differ from the
	// normal's only where a variable changes shape): the two take both
	// CPUs of a small machine (64M values are over a minute of CPU).
	g := &gen{vars: *vars, globals: *globals, anomalous: *anomalous, depth: *depth}
	if err := g.read(flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "genvalues:", err)
		os.Exit(1)
	}
	outs := []string{flag.Arg(1), flag.Arg(2)}
	type result struct {
		n       int
		samples uint64
		err     error
	}
	res := make([]result, len(outs))
	var wg sync.WaitGroup
	for i, out := range outs {
		wg.Add(1)
		g := g.clone()
		go func() {
			defer wg.Done()
			res[i].n, res[i].samples, res[i].err = g.write(out, *values/2, i == 1)
		}()
	}
	wg.Wait()
	for i, out := range outs {
		if res[i].err != nil {
			fmt.Fprintln(os.Stderr, "genvalues:", res[i].err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "%s: %d samples, %d values\n", out, res[i].samples, res[i].n)
	}
}

type mapping struct {
	start, end, pgoff uint64
	path              string
	buildID           []byte
}

// variable is one synthetic schema entry and how its values are drawn.
type variable struct {
	src     recording.ValueSource
	shape   int // see next
	buggy   int // the shape in the buggy recording
	scale   int64
	hold    int // samples a pointer or a configuration value lasts
	state   int64
	left    int
	counter int64
}

type gen struct {
	vars, globals, depth int
	anomalous            float64
	header               []recording.Record // Meta, Comm, Mmap
	stacks               map[uint64]*recording.Stack
	samples              []recording.Sample
	maps                 []mapping
	funcOf               map[uint64]int // user address (at a depth > 0: return address) → function index
	funcs                []string
	schema               []*variable // per function: vars entries, then the globals
	rng                  uint64
}

func (g *gen) read(in string) error {
	r, err := recording.Open(in)
	if err != nil {
		return err
	}
	defer r.Close()
	g.stacks = map[uint64]*recording.Stack{}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch v := rec.(type) {
		case *recording.Meta, *recording.Comm:
			g.header = append(g.header, rec)
		case *recording.Mmap:
			g.header = append(g.header, rec)
			g.maps = append(g.maps, mapping{v.Start, v.Start + v.Len, v.Pgoff, v.Path, v.BuildID})
		case *recording.Stack:
			g.stacks[v.ID] = v
		case *recording.Sample:
			if v.Event == recording.EventCPU && v.StackID != 0 {
				g.samples = append(g.samples, *v)
			}
		}
	}
	if len(g.samples) == 0 {
		return fmt.Errorf("%s has no CPU samples with stacks", in)
	}
	// Name the functions of the user frames.
	sym := symbol.New(symbol.Options{})
	g.funcOf = map[uint64]int{}
	index := map[string]int{}
	for _, st := range g.stacks {
		for i, a := range st.User {
			if i > g.depth {
				break
			}
			if _, ok := g.funcOf[a]; ok {
				continue
			}
			look := a
			if i > 0 {
				look--
			}
			name := ""
			for _, m := range g.maps {
				if look >= m.start && look < m.end && len(m.path) > 0 && m.path[0] == '/' {
					if o, err := sym.Object(m.path, m.buildID); err == nil {
						if fr := o.Lookup(look - m.start + m.pgoff); len(fr) > 0 {
							name = fr[0].Function
						}
					}
					break
				}
			}
			if name == "" {
				g.funcOf[a] = -1
				continue
			}
			fi, ok := index[name]
			if !ok {
				fi = len(g.funcs)
				g.funcs = append(g.funcs, name)
				index[name] = fi
			}
			g.funcOf[a] = fi
		}
	}
	// The schema: per function, vars variables, then the globals.
	g.rng = 0x9e3779b97f4a7c15
	tags := []string{"loop", "cond", "args", "loop,cond", "cond,args"}
	id := uint32(0)
	for fi, fn := range g.funcs {
		for k := 0; k < g.vars; k++ {
			id++
			v := &variable{src: recording.ValueSource{ID: id, Class: recording.SourceVariable,
				Name: fmt.Sprintf("v%d", k), Function: fn, File: "bench.c", Line: 10 + fi, Type: "long", Tags: tags[k%len(tags)]}}
			if k == g.vars-1 {
				v.src.Name, v.src.Type, v.src.Pointer, v.src.Tags = "p", "struct item *", true, "args"
			}
			g.schema = append(g.schema, v)
		}
	}
	for k := 0; k < g.globals; k++ {
		id++
		g.schema = append(g.schema, &variable{src: recording.ValueSource{ID: id, Class: recording.SourceVariable,
			Name: fmt.Sprintf("g_%d", k), Function: "#global", File: "bench.c", Line: 1, Type: "unsigned long", Tags: "none", Global: true}})
	}
	for _, v := range g.schema {
		v.shape = int(g.next() % 5)
		if v.src.Pointer {
			v.shape = shapePointer
		}
		v.scale = int64(16 << (g.next() % 16))
		v.hold = 1 + int(g.next()%8)
		v.buggy = v.shape
		if float64(g.next()%10000)/10000 < g.anomalous {
			switch g.next() % 3 {
			case 0:
				v.buggy = shapeWide
			case 1:
				v.buggy = shapeConst
			default:
				v.buggy = shapeHeld
			}
		}
	}
	return nil
}

// clone is a generator that writes independently of g: its own samples
// (write sorts them), variables' state and random state.
func (g *gen) clone() *gen {
	c := *g
	c.samples = slices.Clone(g.samples)
	c.schema = make([]*variable, len(g.schema))
	for i, v := range g.schema {
		w := *v
		c.schema[i] = &w
	}
	return &c
}

const (
	shapeUniform = iota
	shapeBell
	shapeCounter
	shapeConfig
	shapeSmall
	shapePointer
	shapeWide  // buggy: a range 100 times wider
	shapeConst // buggy: stuck at 0
	shapeHeld  // buggy: each value held 20 times longer
)

func (g *gen) next() uint64 {
	g.rng ^= g.rng << 13
	g.rng ^= g.rng >> 7
	g.rng ^= g.rng << 17
	return g.rng
}

// value draws the next value of v.
func (g *gen) value(v *variable, buggy bool) int64 {
	shape := v.shape
	if buggy {
		shape = v.buggy
	}
	held := shape == shapeHeld
	if held {
		shape = v.shape
	}
	if v.left > 0 && (shape == shapeConfig || shape == shapePointer || held) {
		v.left--
		return v.state
	}
	var x int64
	switch shape {
	case shapeUniform:
		x = int64(g.next() % uint64(v.scale))
	case shapeBell:
		x = int64((g.next()%uint64(v.scale) + g.next()%uint64(v.scale) + g.next()%uint64(v.scale)) / 3)
	case shapeCounter:
		v.counter = (v.counter + 1 + int64(g.next()%3)) % v.scale
		x = v.counter
	case shapeConfig:
		x = v.scale + int64(g.next()%4)
		v.left = 50 * v.hold
	case shapeSmall:
		x = int64(g.next() % 8)
	case shapePointer:
		x = 0x5555_0000_0000 + int64(g.next()%4096)*64
		v.left = v.hold - 1
	case shapeWide:
		x = int64(g.next() % uint64(v.scale*100))
	case shapeConst:
		x = 0
	}
	if held {
		v.left = 20*v.hold - 1
	}
	v.state = x
	return x
}

// write writes a recording of want values to out; it returns how many
// values and samples it wrote.
func (g *gen) write(out string, want int, buggy bool) (int, uint64, error) {
	w, err := recording.Create(out)
	if err != nil {
		return 0, 0, err
	}
	for _, r := range g.header {
		if err := w.Write(r); err != nil {
			return 0, 0, err
		}
	}
	for _, v := range g.schema {
		v.left, v.counter = 0, 0
		if err := w.Write(&v.src); err != nil {
			return 0, 0, err
		}
	}
	// Samples in time order, repeated until enough values are written.
	sort.SliceStable(g.samples, func(i, j int) bool { return g.samples[i].Time < g.samples[j].Time })
	t0 := g.samples[0].Time
	span := g.samples[len(g.samples)-1].Time - t0 + 1_000_000
	n := 0
	var samples, last uint64 // for the End record, as the recorder writes it
	globals := g.schema[len(g.funcs)*g.vars:]
	for round := uint64(0); n < want; round++ {
		for _, s := range g.samples {
			if n >= want {
				break
			}
			st := g.stacks[s.StackID]
			s.Time += round * span
			if err := w.WriteSample(s, st.Kernel, st.User); err != nil {
				return n, samples, err
			}
			samples, last = samples+1, s.Time
			val := func(v *variable, depth int, pc uint64) error {
				x := g.value(v, buggy)
				kind := recording.ValueInt
				if g.next()%100 == 0 {
					kind, x = recording.ValueMissing, 0
				}
				n++
				return w.Write(&recording.Value{Time: s.Time, PID: s.PID, TID: s.TID, Source: v.src.ID,
					Depth: uint8(depth), Type: kind, PC: pc, Bits: uint64(x)})
			}
			for d, a := range st.User {
				if d > g.depth {
					break
				}
				if d == 0 {
					for _, v := range globals {
						if err := val(v, 0, a); err != nil {
							return n, samples, err
						}
					}
				}
				fi := g.funcOf[a]
				if fi < 0 {
					continue
				}
				for _, v := range g.schema[fi*g.vars : (fi+1)*g.vars] {
					if err := val(v, d, a); err != nil {
						return n, samples, err
					}
				}
			}
		}
	}
	if err := w.Write(&recording.End{Time: last, Samples: samples}); err != nil {
		return n, samples, err
	}
	return n, samples, w.Close()
}
