package syscallprog

import (
	"bufio"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestStackIDsNameTheirChains: every chain id a record carries names the
// chain walked for that record, while the chains are read back as they
// come (as the recorder does) and read again and again, and threads block
// and make calls from several places at once on every CPU. A switch's
// kernel chain starts in __schedule; an entry's does not; a user chain
// starts at the record's IP. The store is small (256 chains) so that many
// chains are walked for the first time while others are read.
func TestStackIDsNameTheirChains(t *testing.T) {
	testutil.NeedRoot(t)
	sched := kernelSymbol(t, "__schedule")
	tr, err := New(Options{Syscalls: true, Switches: true, KernelStacks: true, RingBytes: 8 << 20, stackEntries: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Add(uint32(os.Getpid())); err != nil {
		t.Fatal(err)
	}
	type rec struct {
		switched, entry bool
		tid             uint32
		nr, ip          uint64
		user, kern      int64
	}
	var recs []rec
	chains := map[int64][]uint64{} // as first read, kernel chains trimmed
	kernel := map[int64]bool{}
	read := func(id int64, k bool) {
		if id < 0 {
			return
		}
		if _, ok := chains[id]; ok {
			return
		}
		if k {
			chains[id] = append([]uint64(nil), tr.KernelStack(id)...)
		} else {
			chains[id] = append([]uint64(nil), tr.Stack(id)...)
		}
		kernel[id] = k
	}
	var mu sync.Mutex
	var known []int64
	stop := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for done := false; !done; {
			select {
			case <-stop:
				done = true
			default:
			}
			err := tr.Drain(func(ev *Event) {
				if ev.Exit || ev.Waking || ev.PID != uint32(os.Getpid()) {
					return
				}
				r := rec{switched: ev.Switch, entry: !ev.Switch, tid: ev.TID, nr: ev.Nr, ip: ev.IP, user: ev.UserStack, kern: ev.KernStack}
				recs = append(recs, r)
				read(r.user, false)
				read(r.kern, true)
			})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			for id := range chains {
				if !slices.Contains(known, id) {
					known = append(known, id)
				}
			}
			mu.Unlock()
		}
	}()
	// Other readers read every chain known again and again while the
	// threads walk theirs.
	var readers sync.WaitGroup
	for h := 0; h < 2; h++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			buf := make([]uint64, MaxStack)
			for {
				select {
				case <-drained:
					return
				default:
				}
				mu.Lock()
				ids := known
				mu.Unlock()
				for _, id := range ids {
					tr.readStack(id, buf)
				}
				runtime.Gosched()
			}
		}()
	}
	var wg sync.WaitGroup
	workers := 2 * runtime.NumCPU()
	tids := make([]uint32, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids[w] = uint32(unix.Gettid())
			for i := 0; i < 300; i++ {
				ts := unix.NsecToTimespec(int64(20 * time.Microsecond))
				tv := unix.NsecToTimeval(int64(20 * time.Microsecond))
				switch (i + w) % 4 {
				case 0:
					_ = unix.Nanosleep(&ts, nil)
				case 1:
					_, _ = unix.Select(0, nil, nil, nil, &tv)
				case 2:
					siteA()
				default:
					siteB()
				}
			}
		}(w)
	}
	wg.Wait()
	tr.Remove(uint32(os.Getpid()))
	close(stop)
	<-drained
	// The readers end before the tracer is closed (deferred): one still
	// reading then would find its maps gone.
	readers.Wait()
	checked := map[string]int{}
	bad := 0
	// Each worker calls getppid through siteA and getpgid (Getpgrp) through siteB
	// (not through getppidA or getpgrpB, whose frame the walk skips: the
	// system call's assembly has none).
	workerTID := map[uint32]bool{}
	for _, tid := range tids {
		workerTID[tid] = true
	}
	sites := map[string]int{}
	for _, r := range recs {
		if workerTID[r.tid] && r.entry && (r.nr == unix.SYS_GETPPID || r.nr == unix.SYS_GETPGID) {
			next := map[bool]string{true: "A", false: "B"}[r.nr == unix.SYS_GETPPID]
			site := "none"
			for _, pc := range chains[r.user] {
				if f := runtime.FuncForPC(uintptr(pc - 1)); f != nil && strings.HasSuffix(f.Name(), ".siteA") {
					site = "A"
				} else if f != nil && strings.HasSuffix(f.Name(), ".siteB") {
					site = "B"
				}
			}
			if r.user < 0 {
				site = "lost"
			} else if site != next {
				bad++
				if bad <= 5 {
					t.Errorf("thread %d: a getppid or getpgrp entry's chain %d goes through %s, want site%s: %s", r.tid, r.user, site, next, funcs(chains[r.user]))
				}
			}
			sites[site]++
		}
		if r.kern >= 0 && len(chains[r.kern]) > 0 {
			in := sched.has(chains[r.kern][0])
			if r.switched != in {
				bad++
				if bad <= 5 {
					t.Errorf("switch %v: kernel chain %d starts at %#x, in __schedule: %v (%d frames)", r.switched, r.kern, chains[r.kern][0], in, len(chains[r.kern]))
				}
			}
			checked[map[bool]string{true: "switch kernel", false: "entry kernel"}[r.switched]]++
		}
		if r.user >= 0 && len(chains[r.user]) > 0 {
			if chains[r.user][0] != r.ip {
				bad++
				if bad <= 5 {
					t.Errorf("switch %v: user chain %d starts at %#x, its IP is %#x", r.switched, r.user, chains[r.user][0], r.ip)
				}
			}
			checked[map[bool]string{true: "switch user", false: "entry user"}[r.switched]]++
		}
	}
	if sites["A"]+sites["B"]+sites["lost"] != workers*150 || sites["A"] == 0 || sites["B"] == 0 {
		t.Errorf("the workers' getppid and getpgrp entries by the function their chain goes through: %v, want %d", sites, workers*150)
	}
	if n := tr.Lost(); n != 0 {
		t.Errorf("%d records lost", n)
	}
	t.Logf("%d records, %d chains; getppid/getpgrp entries by site %v; checked %v; %d named another chain", len(recs), len(chains), sites, checked, bad)
	if checked["switch kernel"] == 0 || checked["entry user"] == 0 || checked["entry kernel"] == 0 {
		t.Errorf("checked %v: want switches' kernel chains and entries' chains", checked)
	}
}

// symRange is where a kernel function lies.
type symRange [2]uint64

func (r symRange) has(pc uint64) bool { return pc >= r[0] && pc < r[1] }

// kernelSymbol returns where function name lies, from /proc/kallsyms (it
// ends where the next symbol starts).
func kernelSymbol(t *testing.T, name string) symRange {
	t.Helper()
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r symRange
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 {
			continue
		}
		addr, err := strconv.ParseUint(fs[0], 16, 64)
		if err != nil || addr == 0 {
			continue
		}
		if r[0] != 0 && r[1] == 0 && addr > r[0] {
			r[1] = addr
			break
		}
		if fs[2] == name && len(fs) == 3 {
			r[0] = addr
		}
	}
	if r[0] == 0 || r[1] == 0 {
		t.Fatalf("%s not in /proc/kallsyms (addresses hidden?)", name)
	}
	return r
}

func funcs(chain []uint64) string {
	var b strings.Builder
	for _, pc := range chain {
		if f := runtime.FuncForPC(uintptr(pc - 1)); f != nil {
			b.WriteString(f.Name() + " ")
		} else {
			b.WriteString(strconv.FormatUint(pc, 16) + " ")
		}
	}
	return b.String()
}

//go:noinline
func siteA() { getppidA() }

//go:noinline
func siteB() { getpgrpB() }

//go:noinline
func getpgrpB() { unix.Getpgrp() }
