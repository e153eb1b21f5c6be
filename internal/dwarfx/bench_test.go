package dwarfx

import (
	"math/rand"
	"testing"
)

const libcPath = "/usr/lib/x86_64-linux-gnu/libc.so.6"

func openLibc(b testing.TB) *Info {
	info, err := Open(libcPath)
	if err != nil || info.Path() == libcPath {
		b.Skipf("no separate debug information for %s (libc6-dbg): %v", libcPath, err)
	}
	return info
}

// samplePCs returns PCs spread over every function (entry, a third and two
// thirds into the first range), shuffled; hot > 0 keeps those of hot
// functions only, as a profile of a program whose time goes to a few
// functions would (the working set then fits in the CPU caches, and what
// remains is the cost of the searches).
func samplePCs(info *Info, hot int) []uint64 {
	fns := info.Functions()
	if hot > 0 {
		r := rand.New(rand.NewSource(2))
		var some []*Function
		for _, k := range r.Perm(len(fns))[:min(hot, len(fns))] {
			some = append(some, fns[k])
		}
		fns = some
	}
	var pcs []uint64
	for _, fn := range fns {
		r := fn.Ranges[0]
		n := r[1] - r[0]
		pcs = append(pcs, fn.Entry, r[0]+n/3, r[0]+2*n/3)
	}
	rand.New(rand.NewSource(1)).Shuffle(len(pcs), func(a, b int) { pcs[a], pcs[b] = pcs[b], pcs[a] })
	return pcs
}

// benchLookup measures what a value sampler does per sample and frame:
// the function at the PC, the variables in scope, and the location of each
// at the PC. Units are parsed before timing starts.
func benchLookup(b *testing.B, info *Info, hot int) {
	pcs := samplePCs(info, hot)
	vars := 0
	for _, pc := range pcs {
		if fn, ok := info.Function(pc); ok {
			for _, v := range fn.Variables(pc) {
				v.Location(pc)
				vars++
			}
		}
	}
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		pc := pcs[k%len(pcs)]
		if fn, ok := info.Function(pc); ok {
			for _, v := range fn.Variables(pc) {
				v.Location(pc)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(info.Functions())), "functions")
	b.ReportMetric(float64(vars)/float64(len(pcs)), "vars/lookup")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(float64(vars)/float64(len(pcs))), "ns/var")
}

// benchFunction measures Function(pc) and Variables(pc) without locations.
func benchFunction(b *testing.B, info *Info, hot int) {
	pcs := samplePCs(info, hot)
	for _, pc := range pcs {
		if fn, ok := info.Function(pc); ok {
			fn.Variables(pc)
		}
	}
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		pc := pcs[k%len(pcs)]
		if fn, ok := info.Function(pc); ok {
			fn.Variables(pc)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(info.Functions())), "functions")
}

func BenchmarkScopeSmall(b *testing.B) {
	_, info := build(b, "-O2")
	benchFunction(b, info, 0)
}

func BenchmarkScopeLibc(b *testing.B)    { benchFunction(b, openLibc(b), 0) }
func BenchmarkScopeLibcHot(b *testing.B) { benchFunction(b, openLibc(b), 8) }

func BenchmarkVariablesAtPCSmall(b *testing.B) {
	_, info := build(b, "-O2")
	benchLookup(b, info, 0)
}

func BenchmarkVariablesAtPCLibc(b *testing.B)    { benchLookup(b, openLibc(b), 0) }
func BenchmarkVariablesAtPCLibcHot(b *testing.B) { benchLookup(b, openLibc(b), 8) }

// BenchmarkOpenLibc is Open of libc's debug file: unit headers and root
// DIEs (and decompressing its zlib sections).
func BenchmarkOpenLibc(b *testing.B) {
	openLibc(b)
	for k := 0; k < b.N; k++ {
		if _, err := Open(libcPath); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstLookupLibc is the first lookup after Open: only the unit
// holding the PC is parsed.
func BenchmarkFirstLookupLibc(b *testing.B) {
	info := openLibc(b)
	fs := info.FunctionsNamed("__libc_malloc")
	if len(fs) == 0 {
		b.Skip("no __libc_malloc")
	}
	pc := fs[0].Entry + 0x20
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		b.StopTimer()
		info, err := Open(libcPath)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		fn, _ := info.Function(pc)
		for _, v := range fn.Variables(pc) {
			v.Location(pc)
		}
	}
}

// BenchmarkIndexAllLibc parses every unit (FunctionsNamed, Globals).
func BenchmarkIndexAllLibc(b *testing.B) {
	openLibc(b)
	for k := 0; k < b.N; k++ {
		b.StopTimer()
		info, err := Open(libcPath)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		info.FunctionsNamed("malloc")
	}
}
