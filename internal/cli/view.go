package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/check"
	"github.com/culprit-dev/culprit/internal/analysis/introperf"
	"github.com/culprit-dev/culprit/internal/analysis/models"
	"github.com/culprit-dev/culprit/internal/analysis/variance"
	"github.com/culprit-dev/culprit/internal/analysis/vprof"
	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/render"
	"github.com/culprit-dev/culprit/internal/store"
	"github.com/culprit-dev/culprit/internal/symbol"
	"github.com/culprit-dev/culprit/internal/view"
)

func newView() *cobra.Command {
	var (
		ff     filterFlags
		listen string
		open   bool
		bases  []string
	)
	c := &cobra.Command{
		Use:   "view [FILE...] [--base FILE...] [--listen 127.0.0.1:0] [--open]",
		Short: "Explore recordings in the browser: pprof's views, a time view and every analysis",
		Long: `View serves recordings (default culprit.rec) as a local web page and prints
its URL: pprof's web UI on culprit's symbolized samples, a time view where
selecting a range opens pprof's views on it, and a page for each analysis
the recordings can feed (off-CPU, latency, contexts, diagnose, traced calls,
variance). It runs until interrupted (Ctrl-C).

Most common uses:
  culprit view                          culprit.rec in the browser
  culprit view --base before.rec after.rec   every page as a comparison
  culprit view --open --comm myprog run.rec

The server listens on the loopback interface and refuses requests without
the random token in its URL. Pages and what each needs: docs/cli.md
(culprit view).`,
		Example: `  culprit view
  culprit view --base before.rec after.rec
  culprit view --open --comm myprog culprit.rec
  culprit view --listen 0.0.0.0:8080 culprit.rec     reachable from other hosts`,
		RunE: func(c *cobra.Command, args []string) error {
			host, _, err := net.SplitHostPort(listen)
			if err != nil {
				return usagef("--listen %q: want HOST:PORT, e.g. 127.0.0.1:0 (port 0 picks a free one)", listen)
			}
			in, err := viewInputs(&ff, args, bases, c.ErrOrStderr())
			if err != nil {
				return err
			}
			srv, err := view.New(in, c.ErrOrStderr())
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			defer ln.Close()
			if !loopback(host) {
				fmt.Fprintf(c.ErrOrStderr(), "culprit view: warning: listening on %s, not only on this machine: whoever has the URL can read the profiles\n", ln.Addr())
			}
			// Interrupts stop the server from the moment its URL is known.
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			url := "http://" + ln.Addr().String() + srv.Path()
			fmt.Fprintln(c.OutOrStdout(), url)
			if open {
				if err := exec.Command("xdg-open", url).Start(); err != nil {
					fmt.Fprintf(c.ErrOrStderr(), "culprit view: could not open a browser (%v): open the URL above\n", err)
				}
			}
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_ = hs.Shutdown(sctx)
			}()
			if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:0", "address to serve on (HOST:PORT; port 0 picks a free one); other than loopback only if you mean it")
	f.StringSliceVar(&bases, "base", nil, "recordings of a run to compare with (comma-separated or repeated): pprof's views show the difference, contexts and diagnose compare with it")
	f.BoolVar(&open, "open", false, "open the page in the default browser (xdg-open)")
	ff.register(f)
	f.SortFlags = false
	return c
}

// viewInputs loads the recordings to view and those of the base run, and
// sets up the analyses their pages run: latency when the recordings hold
// system call or context switch events, contexts when both runs do,
// diagnose when both hold sampled values.
func viewInputs(ff *filterFlags, paths, bases []string, stderr io.Writer) (view.Inputs, error) {
	if len(paths) == 0 {
		// In a repository with stored runs and no recording here, the
		// pages of the store alone.
		if _, err := os.Stat("culprit.rec"); errors.Is(err, os.ErrNotExist) && len(bases) == 0 && storeExists() {
			in := view.Inputs{Profile: &profile.Profile{}}
			storeInputs(&in)
			return in, nil
		}
		paths = []string{"culprit.rec"}
	}
	in := view.Inputs{Names: paths, Bases: bases}
	// The samples held, the values read again on request (the time
	// view's lanes, diagnose): they are most of what recordings of
	// sampled values hold.
	// The base run is loaded at once on another goroutine (a load keeps
	// about one CPU busy), what it says held until the viewed
	// recordings' load has said its own, in that order as before.
	// The two loads share their objects: each object's symbols and
	// debugging information read once (libc's, for one, takes 0.3 s).
	sym := symbol.New(symbol.Options{})
	load := func(paths []string, stderr io.Writer) (*profile.Profile, *profile.Profile, error) {
		return ff.loadWith(paths, stderr, loader.Options{StreamValues: true, Symbolizer: sym})
	}
	var base struct {
		p, whole *profile.Profile
		err      error
		said     bytes.Buffer
	}
	baseDone := make(chan struct{})
	if len(bases) > 0 {
		go func() {
			defer close(baseDone)
			base.p, base.whole, base.err = load(bases, &base.said)
		}()
	} else {
		close(baseDone)
	}
	p, whole, err := load(paths, stderr)
	<-baseDone
	if err != nil {
		return in, err
	}
	if len(p.Samples) == 0 && len(p.Calls) == 0 {
		return in, fmt.Errorf("no samples or traced calls to show in %s", strings.Join(paths, ", "))
	}
	in.Profile = p
	// The recorded objects, listed on the first source or disassembly.
	var objsOnce sync.Once
	var objs func(string) (*symbol.Object, error)
	var objsErr error
	in.Objects = func(path string) (*symbol.Object, error) {
		objsOnce.Do(func() { objs, objsErr = recordedObjects(append(slices.Clone(paths), bases...)) })
		if objsErr != nil {
			return nil, objsErr
		}
		return objs(path)
	}
	var baseWhole *profile.Profile
	if len(bases) > 0 {
		_, _ = stderr.Write(base.said.Bytes())
		if in.Base, baseWhole, err = base.p, base.whole, base.err; err != nil {
			return in, err
		}
		if len(in.Base.Samples) == 0 && len(in.Base.Calls) == 0 {
			return in, fmt.Errorf("no samples or traced calls in the base %s", strings.Join(bases, ", "))
		}
	}
	flt, err := ff.filter()
	if err != nil {
		return in, err
	}
	set := introperf.EventsAll
	kernelEvents := func(p *profile.Profile) bool {
		for _, s := range p.Samples {
			if s.Event != recording.EventCPU {
				return true
			}
		}
		return false
	}
	if kernelEvents(whole) {
		all := flt
		all.AllEvents = true
		in.Events = whole.Apply(all)
		if baseWhole != nil && kernelEvents(baseWhole) {
			in.BaseEvents = baseWhole.Apply(all)
		}
	}
	// IntroPerf infers latencies from consecutive events of a thread:
	// dropping some by stack would join separate calls (see registerHide).
	flt.Focus, flt.Ignore = nil, nil
	if kernelEvents(whole) {
		in.Latency = func(rng view.Range) (*introperf.Result, error) {
			_, r, err := analyzeRun(whole, paths, stderr, rng.Narrow(flt), set, introperf.Options{KeepInstances: true})
			return r, err
		}
	}
	if baseWhole != nil && kernelEvents(whole) && kernelEvents(baseWhole) {
		in.Contexts = func(rng view.Range) (introperf.Comparison, error) {
			funcs := introperf.NewFuncTable()
			likeB, likeG := likeWithLike(stderr, baseWhole, whole, strings.Join(bases, ","), strings.Join(paths, ","))
			_, rb, err := analyzeRun(baseWhole, bases, stderr, flt, set, introperf.Options{Funcs: funcs, Like: likeB})
			if err != nil {
				return introperf.Comparison{}, err
			}
			_, rg, err := analyzeRun(whole, paths, stderr, rng.Narrow(flt), set, introperf.Options{Funcs: funcs, Like: likeG})
			if err != nil {
				return introperf.Comparison{}, err
			}
			ro := introperf.RankOptions{Mode: introperf.RankMode, Scaled: true, Top: 10}
			return introperf.Comparison{Base: rb, Buggy: rg, BaseName: strings.Join(bases, ","), BuggyName: strings.Join(paths, ","),
				Options: ro, Paths: introperf.Rank(rb, rg, ro)}, nil
		}
	}
	if _, ok := variance.SpecOf(p.Metas); ok && len(p.Probes) > 0 {
		// The analysis reads the calls and, in a recording made with
		// --sched, the scheduler's switches and wake-ups: the unfiltered
		// profile's, as culprit variance -i does (the viewed profile keeps
		// the CPU samples only).
		in.Variance = func(rng view.Range) (*variance.Result, error) {
			q := whole
			if !rng.Whole() {
				q = whole.Apply(rng.Narrow(profile.Filter{AllEvents: true}))
			}
			return varianceOf(q, strings.Join(paths, ", "), variance.Spec{}, 0, 0, false, nil)
		}
	}
	if baseWhole != nil && hasValues(whole) && hasValues(baseWhole) {
		in.Diagnose = viewDiagnose(bases, paths, baseWhole, whole, stderr)
	}
	if storeExists() {
		storeInputs(&in)
	}
	return in, nil
}

// viewDiagnose is the diagnose page's analysis: the base's recordings as
// normal runs, the viewed ones as buggy, with vProf's defaults. A side of
// one recording is the profile the view loaded of it (baseWhole, whole:
// every page reads the same load); a side of several is several runs,
// each loaded from its recording once, on the first analysis. The
// machine code of the program is read once for every time range's
// analysis. The analysis pauses in pause (nil: none) at its steps.
func viewDiagnose(bases, paths []string, baseWhole, whole *profile.Profile, stderr io.Writer) func(view.Range, func()) (*vprof.Result, error) {
	d, err := newDiagnoser(bases, paths, vprof.DefaultOptions(), false, stderr)
	if err != nil {
		return func(view.Range, func()) (*vprof.Result, error) { return nil, err }
	}
	loaded := map[string]*profile.Profile{}
	if len(d.normal) == 1 {
		loaded[d.normal[0]] = baseWhole
	}
	if len(d.buggy) == 1 {
		loaded[d.buggy[0]] = whole
	}
	// A recording of a side of several is loaded on the first analysis
	// and kept (its samples and values streamed: what is held is its
	// stacks and counts) for the next: d.run calls load under its lock.
	load := func(path string) (*profile.Profile, error) {
		if p := loaded[path]; p != nil {
			return p, nil
		}
		p, err := loadProfileWith([]string{path}, stderr, loader.Options{Stream: true})
		if err != nil {
			return nil, err
		}
		loaded[path] = p
		return p, nil
	}
	return func(rng view.Range, pause func()) (*vprof.Result, error) {
		var window *profile.Filter
		if !rng.Whole() {
			w := rng.Narrow(profile.Filter{AllEvents: true})
			window = &w
		}
		return d.run(load, nil, window, pause)
	}
}

// hasValues reports whether p has sampled values.
func hasValues(p *profile.Profile) bool {
	counts, err := p.ValueCounts()
	if err != nil {
		return false
	}
	for _, c := range counts {
		if c.All > 0 {
			return true
		}
	}
	return false
}

// storeInputs sets up the pages of the history store.
func storeInputs(in *view.Inputs) {
	in.Runs = func() ([]store.Run, error) {
		st, err := openStore()
		if err != nil {
			return nil, err
		}
		defer st.Close()
		return st.Runs()
	}
	in.Models = func(commit string) ([]models.Function, string, error) {
		st, err := openStore()
		if err != nil {
			return nil, "", err
		}
		defer st.Close()
		return modelsAt(st, commit, "", "", nil, 0.01)
	}
	in.Check = func(commit string) (render.CheckHeader, check.Result, error) {
		st, err := openStore()
		if err != nil {
			return render.CheckHeader{}, check.Result{}, err
		}
		defer st.Close()
		h, res, err := checkCommits(st, "", commit, "", check.Options{Threshold: 0.15, Z: 3, NewShare: check.DefaultNewShare})
		h.FailAbove = h.Threshold
		return h, res, err
	}
}

// storeExists reports whether there is a history store to show without
// making one: --store or $CULPRIT_STORE, or .culprit at the root of the
// git repository culprit runs in.
func storeExists() bool {
	if storeSpec != "" || os.Getenv("CULPRIT_STORE") != "" {
		return true
	}
	root, err := repoRoot()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(root, store.Dir))
	return err == nil
}

// loopback reports whether host names only this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
