package profile

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
)

func TestZZProf(t *testing.T) {
	path := os.Getenv("ZZREC")
	if path == "" {
		t.Skip()
	}
	runtime.MemProfileRate = 4096
	p, err := Load([]string{path}, LoadOptions{Merge: os.Getenv("ZZMERGE") != ""})
	if err != nil {
		t.Fatal(err)
	}
	q := p.Apply(Filter{})
	f := q.Flat(ByFunction)
	runtime.GC()
	fh, _ := os.Create("/tmp/rp/heap.out")
	pprof.WriteHeapProfile(fh)
	fh.Close()
	t.Log(len(p.Samples), len(p.Stacks), len(p.Frames), len(f.Rows))
	runtime.KeepAlive(p)
	runtime.KeepAlive(q)
}
