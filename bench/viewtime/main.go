// Command viewtime measures culprit view on a recording, in headless
// Chromium driven through chromedp: the time until the URL is printed (the
// recording loaded) and until the index is drawn from it, the time
// until the time view's heat map and pprof's flame graph are painted, the
// latency of the interactions (the time view's data, selecting a range and
// opening its flame graph, which builds a new pprof UI, and opening it
// again; a range and a filter drawn in place on the flame graph; the
// flame graph chosen on top and a filter on top, put in place of the
// page; the flame graph, the time view and a function's page clicked on
// the index, put in place of it; a function's page from its form and from
// pprof's top, put in place), and the server's peak RSS; and, each on a
// server of its own, the pages of the analyses' inputs given (diagnose,
// traced calls, variance, stored runs and models: analysisPages). One
// line of key=value per run. What the build timed lacks (a page, a link,
// a page put in place rather than loaded: an older build) is not timed,
// said on stderr and listed as skipped=WHAT,...
//
//	go run ./bench/viewtime -culprit ./culprit -chromium /usr/bin/chromium big.rec
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
)

// hide is the function the filter measured hides.
var hide string

// events and eventsBase are the recordings (and base run) of kernel
// events whose pages are timed: "" for none.
var events, eventsBase string

// eventsOnly: only the pages of events are timed.
var eventsOnly bool

// The inputs of the analyses' pages timed ("" for none): normal and
// buggy recordings with sampled values (diagnose), a base trace and a
// trace (traced calls), a recording of culprit variance, and a git
// repository with a history store (history and models).
var diagNormal, diagBuggy, traceBase, traceRec, varianceRec, storeDir string

// diagKey names the diagnose server's figures (several inputs' runs
// told apart).
var diagKey string

// analysesOnly: only the analyses' pages are timed.
var analysesOnly bool

// deadline bounds a run (a hang guard).
var deadline time.Duration

func main() {
	culprit := flag.String("culprit", "culprit", "the culprit binary")
	chromium := flag.String("chromium", "chromium", "the Chromium binary")
	flag.StringVar(&hide, "hide", "mid_compute", "the function hidden on the flame graph (a box of that text)")
	flag.StringVar(&events, "events", "", "a recording with system calls and context switches: its latency, contexts and off-CPU pages are timed too")
	flag.StringVar(&eventsBase, "events-base", "", "the base run of -events (for its contexts page)")
	flag.BoolVar(&eventsOnly, "events-only", false, "time only the pages of -events (FILE.rec is not opened)")
	flag.StringVar(&diagNormal, "diagnose-normal", "", "a normal run recorded with sampled values: with -diagnose-buggy, the diagnose page is timed")
	flag.StringVar(&diagBuggy, "diagnose-buggy", "", "a buggy run recorded with sampled values")
	flag.StringVar(&diagKey, "diagnose-key", "diagnose", "the name of the diagnose server's figures (KEY_ready_ms, ...)")
	flag.StringVar(&traceBase, "trace-base", "", "the base trace of -trace")
	flag.StringVar(&traceRec, "trace", "", "a trace of function calls (culprit trace): its page is timed")
	flag.StringVar(&varianceRec, "variance", "", "a recording of culprit variance: its page is timed")
	flag.StringVar(&storeDir, "store", "", "a git repository with runs stored (culprit run): the history and models pages are timed, culprit view run there")
	flag.DurationVar(&deadline, "deadline", 5*time.Minute, "the longest a run may take (a hang guard: the analyses of large inputs take minutes)")
	flag.StringVar(&traceDir, "chrome-trace", "", "a directory: each interaction is traced in Chromium, its events written there (WHAT.json, for Perfetto or DevTools) and its renderer main thread's time split by kind (WHAT_tr_*_ms); tracing slows the renderer")
	flag.BoolVar(&analysesOnly, "analyses-only", false, "time only the analyses' pages (-diagnose-*, -trace, -variance, -store; FILE.rec is not opened)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: viewtime [-culprit PATH] [-chromium PATH] FILE.rec")
		os.Exit(2)
	}
	if err := run(*culprit, *chromium, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "viewtime:", err)
		os.Exit(1)
	}
}

// cpuTime is the user and system CPU time process pid has used.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which ends with the last ')':
	// utime and stime are the 12th and 13th, in clock ticks (100 Hz).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f", d.Seconds()*1000) }

func run(culprit, chromium, rec string) error {
	dir, err := os.MkdirTemp("", "viewtime")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium), chromedp.UserDataDir(dir), chromedp.WindowSize(1400, 1000),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true))
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx); err != nil { // the browser starts before the clock does
		return err
	}
	if eventsOnly {
		res, err := eventPages(bctx, culprit)
		if err != nil {
			return err
		}
		fmt.Println(withSkipped(strings.Join(res, " ")))
		return nil
	}
	if analysesOnly {
		res, err := analysisPages(bctx, culprit)
		if err != nil {
			return err
		}
		fmt.Println(withSkipped(strings.Join(res, " ")))
		return nil
	}

	start := time.Now()
	base, pid, stop, err := startView(culprit, "", rec)
	if err != nil {
		return err
	}
	defer stop()
	ready := time.Since(start)
	readyCPU := cpuTime(pid)

	// The index, as a user opens the URL: the page is usable once its
	// links are drawn.
	if err := chromedp.Do(bctx, chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(`#pages a`))); err != nil {
		return fmt.Errorf("index: %v", err)
	}
	open := time.Since(start)
	openCPU := cpuTime(pid)

	t := time.Now()
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"time"),
		chromedp.WaitVisible(chromedp.CSS(`#maps svg.heat path.cell`))); err != nil {
		return fmt.Errorf("time view: %v", err)
	}
	timePaint := time.Since(t)
	// The page's own time to its maps drawn (a mark it sets after the
	// frame that draws them), when it sets one.
	var mapsDrawn string
	if v, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`(() => { const m = performance.getEntriesByName("culprit-maps-drawn")[0]; return m ? m.startTime : -1; })()`)); err == nil && v >= 0 {
		mapsDrawn = fmt.Sprintf("time_view_drawn_ms=%.0f", v)
	}
	cells, err := chromedp.Run(bctx, chromedp.Evaluate[int](`data.threads[0].cells.flat().filter(v => v > 0).length`))
	_ = err

	// The time view's data alone, as the page fetches it.
	data, err := timeGet(base+"time/data", "time view's data")
	if err != nil {
		return err
	}

	var split []string // where Chromium's time went, per page drawn
	t = time.Now()
	c0 := cpuTime(pid)
	m0 := chromeMetrics(bctx)
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"pprof/all/flamegraph"),
		chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxtext`))); err != nil {
		return fmt.Errorf("flame graph: %v", err)
	}
	flame := time.Since(t)
	flameCPU := cpuTime(pid) - c0
	split = append(split, pageSplit(bctx, "flame", m0))

	// The server's builds ahead of use (the views of lines and
	// addresses) end before the ranges are asked for, so that the
	// server CPU time of a range is the range's own: a user chooses a
	// range later than the first view.
	idle := waitIdle(pid)

	// A range: the first cell of the time view's heat map (20 ms) with
	// samples from half a second on (a busy machine may leave a target
	// without the CPU for a while).
	cellsWith, width, err := sampledCells(base + "time/data")
	if err != nil {
		return err
	}
	from := cellsWith[0]
	rng := fmt.Sprintf("%dms-%dms", from, from+width)
	t = time.Now()
	c0 = cpuTime(pid)
	m0 = chromeMetrics(bctx)
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"pprof/"+rng+"/flamegraph"),
		chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxtext`))); err != nil {
		return fmt.Errorf("range flame graph: %v", err)
	}
	rangeFirst := time.Since(t)
	rangeCPU := cpuTime(pid) - c0
	split = append(split, pageSplit(bctx, "range", m0))
	m0 = chromeMetrics(bctx)
	t = time.Now()
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"pprof/"+rng+"/flamegraph"),
		chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxtext`))); err != nil {
		return fmt.Errorf("range flame graph again: %v", err)
	}
	rangeAgain := time.Since(t)
	split = append(split, pageSplit(bctx, "again", m0))

	// Ranges as a user opens them: chosen in the time view (a cell
	// clicked twice), which draws the range's flame graph in place in
	// its frame, without loading a page. First another range (its
	// stacks built on the server: a pprof UI of the range), then the
	// range above again (the server answers from what it kept: what the
	// browser costs, against range_flamegraph_again_ms, which loads the
	// page). The time view and its frame are drawn, and the server idle,
	// before each choice.
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"time"),
		chromedp.WaitVisible(chromedp.CSS(`#maps svg.heat path.cell`))); err != nil {
		return fmt.Errorf("time view: %v", err)
	}
	var inPlace []string
	if ok, _ := chromedp.Run(bctx, chromedp.Evaluate[bool](`!!document.getElementById("flame")`)); ok {
		for _, c := range []struct {
			what string
			from int
		}{{"range_inplace", cellsWith[1]}, {"range_inplace_again", cellsWith[0]}} {
			if err := waitFor(bctx, `(() => { const w = document.getElementById("flame").contentWindow; return !!(w.culpritFlame && w.culpritFlame.stacks && w.document.querySelector("#stack-chart .boxtext")); })()`); err != nil {
				return fmt.Errorf("time view's flame graph: %v", err)
			}
			waitIdle(pid)
			xy, err := chromedp.Run(bctx, chromedp.Evaluate[[]float64](fmt.Sprintf(`cellCenter(0, %d)`, c.from/width)))
			if err != nil || len(xy) != 2 {
				return fmt.Errorf("time view: no cell at %d ms: %v", c.from, err)
			}
			key := fmt.Sprintf("/pprof/%dms-%dms/flamegraph.json", c.from, c.from+width)
			m, err := interaction(bctx, pid, c.what,
				func() error {
					return chromedp.Do(bctx, chromedp.MouseClickXY(xy[0], xy[1]), chromedp.MouseClickXY(xy[0], xy[1]))
				},
				`(() => { const w = document.getElementById("flame").contentWindow; return (w.document.documentElement.dataset.culpritShown || "").endsWith(`+strconv.Quote(key)+`); })()`,
				`document.getElementById("flame").contentWindow.culpritFlame.last`)
			if err != nil {
				return fmt.Errorf("range chosen in the time view: %v", err)
			}
			inPlace = append(inPlace, m)
		}

		// A filter chosen in pprof's menus on the whole flame graph (a
		// function hidden from its action menu, opened on the function's
		// box): drawn in place; then the same query's page loaded afresh.
		if err := chromedp.Do(bctx, chromedp.Navigate(base+"pprof/all/flamegraph"),
			chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxtext`))); err != nil {
			return fmt.Errorf("flame graph: %v", err)
		}
		waitIdle(pid)
		// The box of -hide; when the chart draws it too narrow for its
		// name (a recording where it has little time: on a loaded machine
		// the kernel's share grows), the widest named box below the root,
		// the same interaction on another function. The chart is drawn
		// from the trimmed stacks, then again from the whole set once
		// fetched: boxes come and go meanwhile.
		box := `(() => {
			const named = Array.from(document.querySelectorAll("#stack-chart .boxbg")).filter(e => e.textContent !== "");
			const own = named.find(e => e.textContent === ` + strconv.Quote(hide) + `);
			if (own) return own;
			named.sort((a, b) => b.getBoundingClientRect().width - a.getBoundingClientRect().width);
			return named.length > 1 ? named[1] : null;
		})()`
		if err := waitFor(bctx, `!!`+box); err != nil {
			return fmt.Errorf("flame graph: no box to hide: %v", err)
		}
		// The action menu opened (an interaction of its own), then Hide
		// clicked: timed.
		ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
			const box = `+box+`;
			if (!box) return false;
			const r = box.getBoundingClientRect();
			box.dispatchEvent(new MouseEvent("contextmenu", {bubbles: true, cancelable: true, clientX: r.left + 2, clientY: r.top + 2}));
			return true;
		})()`))
		if err != nil || !ok {
			return fmt.Errorf("no box %s to hide: %v", hide, err)
		}
		if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`#action-hide`))); err != nil {
			return fmt.Errorf("the flame graph's action menu: %v", err)
		}
		act, err := clickAt(bctx, `#action-hide`)
		if err != nil {
			return err
		}
		m, err := interaction(bctx, pid, "filter_inplace", act,
			`new URL(location.href).searchParams.has("h") && (document.documentElement.dataset.culpritShown || "").includes("flamegraph.json?")`,
			`culpritFlame.last`)
		if err != nil {
			return fmt.Errorf("hiding %s on the flame graph: %v", hide, err)
		}
		inPlace = append(inPlace, m)
		hidden, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href`))
		if err != nil {
			return err
		}
		m0 = chromeMetrics(bctx)
		t = time.Now()
		if err := chromedp.Do(bctx, chromedp.Navigate(hidden),
			chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxtext`))); err != nil {
			return fmt.Errorf("flame graph with %s hidden: %v", hide, err)
		}
		inPlace = append(inPlace, fmt.Sprintf("filter_loaded_ms=%s", ms(time.Since(t))))
		split = append(split, pageSplit(bctx, "filter", m0))
	}

	// A page of pprof's with no script of its own beyond the menus (top,
	// from the responses kept): what any navigation costs Chromium here.
	if _, err := timeGet(base+"pprof/all/top", "top"); err != nil {
		return err
	}
	m0 = chromeMetrics(bctx)
	t = time.Now()
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"pprof/all/top"),
		chromedp.WaitVisible(chromedp.CSS(`#toptable tr`))); err != nil {
		return fmt.Errorf("top: %v", err)
	}
	topPaint := time.Since(t)
	split = append(split, pageSplit(bctx, "top", m0))

	// pprof's pages put other pages of their UI in place: the whole
	// flame graph chosen from top's View menu, then on top a function
	// hidden (its row selected, Refine, Hide), against the same query's
	// page loaded.
	if ok, _ := chromedp.Run(bctx, chromedp.Evaluate[bool](`typeof window.culpritSwap === "function"`)); ok {
		waitIdle(pid)
		if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#view .menu-name`)), chromedp.WaitVisible(chromedp.CSS(`#flamegraph`))); err != nil {
			return fmt.Errorf("top's View menu: %v", err)
		}
		act, err := clickAt(bctx, `#flamegraph`)
		if err != nil {
			return err
		}
		m, err := interaction(bctx, pid, "flame_swap", act,
			`(document.documentElement.dataset.culpritSwapped || "").includes("/flamegraph") && !!document.querySelector("#stack-chart .boxtext")`,
			swapTiming)
		if err != nil {
			return fmt.Errorf("the flame graph from top's View menu: %v", err)
		}
		inPlace = append(inPlace, m)
		if err := chromedp.Do(bctx, chromedp.Navigate(base+"pprof/all/top"),
			chromedp.WaitVisible(chromedp.CSS(`#toptable tr`))); err != nil {
			return fmt.Errorf("top: %v", err)
		}
		xy, err := chromedp.Run(bctx, chromedp.Evaluate[[]float64](`(() => {
			const td = Array.from(document.querySelectorAll("#toptable tbody td")).find(e => e.textContent === `+strconv.Quote(hide)+`);
			if (!td) return [];
			td.scrollIntoView({block: "center"});
			const r = td.getBoundingClientRect();
			return [r.left + r.width / 2, r.top + r.height / 2];
		})()`))
		if err != nil || len(xy) != 2 {
			return fmt.Errorf("top: no row of %s: %v", hide, err)
		}
		waitIdle(pid)
		if err := chromedp.Do(bctx, chromedp.MouseClickXY(xy[0], xy[1]),
			chromedp.Click(chromedp.CSS(`#refine .menu-name`)), chromedp.WaitVisible(chromedp.CSS(`#hide`))); err != nil {
			return fmt.Errorf("top's Refine menu: %v", err)
		}
		act, err = clickAt(bctx, `#hide`)
		if err != nil {
			return err
		}
		m, err = interaction(bctx, pid, "top_filter_swap", act,
			`new URL(location.href).searchParams.has("h") && (document.documentElement.dataset.culpritSwapped || "").includes("/top?") && !!document.querySelector("#toptable tbody tr")`,
			swapTiming)
		if err != nil {
			return fmt.Errorf("hiding %s on top: %v", hide, err)
		}
		inPlace = append(inPlace, m)
		hidden, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href`))
		if err != nil {
			return err
		}
		t = time.Now()
		if err := chromedp.Do(bctx, chromedp.Navigate(hidden),
			chromedp.WaitVisible(chromedp.CSS(`#toptable tbody tr`))); err != nil {
			return fmt.Errorf("top with %s hidden: %v", hide, err)
		}
		inPlace = append(inPlace, fmt.Sprintf("top_filter_loaded_ms=%s", ms(time.Since(t))))
	}

	// culprit's own pages put pprof's pages in place too: the whole flame
	// graph clicked on the index (against "flame graph paint", its page
	// loaded).
	hasFlame, err := openWith(bctx, base, `#pprof a[href$="pprof/all/flamegraph"]`, "flame_index_swap")
	if err != nil {
		return fmt.Errorf("index: %v", err)
	}
	if ok, _ := chromedp.Run(bctx, chromedp.Evaluate[bool](`typeof window.culpritSwap === "function"`)); ok {
		if hasFlame {
			waitIdle(pid)
			act, err := clickAt(bctx, `#pprof a[href$="pprof/all/flamegraph"]`)
			if err != nil {
				return err
			}
			m, err := interaction(bctx, pid, "flame_index_swap", act,
				`(document.documentElement.dataset.culpritSwapped || "").includes("/flamegraph") && !!document.querySelector("#stack-chart .boxtext")`,
				swapTiming)
			if err != nil {
				return fmt.Errorf("the flame graph from the index: %v", err)
			}
			inPlace = append(inPlace, m)
		}

		// The time view clicked on the index, put in place of the index
		// (against "time view paint", its page loaded): its maps drawn.
		if ok, err := openWith(bctx, base, `#pages a[href="time"]`, "time_index_swap"); err != nil {
			return fmt.Errorf("index: %v", err)
		} else if !ok {
			// skipped: no link
		} else if own, _ := chromedp.Run(bctx, chromedp.Evaluate[bool](`(window.culpritSwap.own || []).includes("time")`)); !own {
			// Builds before the time view was put in place load it.
			skip("time_index_swap", "the build loads the time view instead of putting it in place")
		} else {
			waitIdle(pid)
			act, err := clickAt(bctx, `#pages a[href="time"]`)
			if err != nil {
				return err
			}
			m, err := interaction(bctx, pid, "time_index_swap", act,
				`(document.documentElement.dataset.culpritSwapped || "").endsWith("/time") && !!document.querySelector("#maps svg.heat path.cell")`,
				swapTiming)
			if err != nil {
				return fmt.Errorf("the time view from the index: %v", err)
			}
			inPlace = append(inPlace, m)
		}
		// A function's page: clicked on the index, then a function's
		// name sent by its form, then clicked atop pprof's top of
		// another function, each put in place; against it loaded.
		// Builds before the function page was put in place load it.
		if ok, err := openWith(bctx, base, `#pages a[href="fn"]`, "fn_index_swap,fn_form_swap,fn_top_swap,fn_loaded"); err != nil {
			return fmt.Errorf("index: %v", err)
		} else if !ok {
			// skipped: no link
		} else if own, _ := chromedp.Run(bctx, chromedp.Evaluate[bool](`(window.culpritSwap.own || []).includes("fn")`)); !own {
			skip("fn_index_swap,fn_form_swap,fn_top_swap,fn_loaded", "the build loads the function page instead of putting it in place")
		} else {
			fnShown := func(q string) string {
				return `(document.documentElement.dataset.culpritSwapped || "").endsWith("/fn` + q + `") && !!document.querySelector("form input[name=f]")`
			}
			waitIdle(pid)
			act, err := clickAt(bctx, `#pages a[href="fn"]`)
			if err != nil {
				return err
			}
			m, err := interaction(bctx, pid, "fn_index_swap", act,
				fnShown(""), swapTiming)
			if err != nil {
				return fmt.Errorf("the function page from the index: %v", err)
			}
			inPlace = append(inPlace, m)
			waitIdle(pid)
			if err := chromedp.Do(bctx, chromedp.SetValue(chromedp.CSS(`form input[name="f"]`), hide)); err != nil {
				return fmt.Errorf("the function page's form: %v", err)
			}
			act, err = clickAt(bctx, `form button`)
			if err != nil {
				return err
			}
			m, err = interaction(bctx, pid, "fn_form_swap", act,
				fnShown("?f="+hide)+` && !!document.querySelector("#threads tr")`, swapTiming)
			if err != nil {
				return fmt.Errorf("the function page of %s from its form: %v", hide, err)
			}
			inPlace = append(inPlace, m)
			const other = "worker"
			if ok, err := openWith(bctx, base+"pprof/all/top?f="+other, `#culprit-nav a[href$="/fn"]`, "fn_top_swap"); err != nil {
				return fmt.Errorf("top of %s: %v", other, err)
			} else if ok {
				waitIdle(pid)
				act, err := clickAt(bctx, `#culprit-nav a[href$="/fn"]`)
				if err != nil {
					return err
				}
				m, err = interaction(bctx, pid, "fn_top_swap", act,
					fnShown("?f="+other)+` && !!document.querySelector("#threads tr")`, swapTiming)
				if err != nil {
					return fmt.Errorf("the function page of %s from top: %v", other, err)
				}
				inPlace = append(inPlace, m)
			}
			waitIdle(pid)
			t := time.Now()
			if err := chromedp.Do(bctx, chromedp.Navigate(base+"fn?f="+hide), chromedp.WaitVisible(chromedp.CSS(`#threads tr`))); err != nil {
				return fmt.Errorf("the function page of %s: %v", hide, err)
			}
			inPlace = append(inPlace, fmt.Sprintf("fn_loaded_ms=%s", ms(time.Since(t))))
		}
	}

	if events != "" {
		m, err := eventPages(bctx, culprit)
		if err != nil {
			return fmt.Errorf("%s: %v", events, err)
		}
		inPlace = append(inPlace, m...)
	}

	am, err := analysisPages(bctx, culprit)
	if err != nil {
		return err
	}
	inPlace = append(inPlace, am...)

	// A function's page over HTTP, a function asked for the first time
	// (the server's answer, no drawing).
	fnGet, err := timeGet(base+"fn?f=^"+hide+"$", "fn")
	if err != nil {
		return err
	}
	inPlace = append(inPlace, fmt.Sprintf("fn_get_ms=%s", ms(fnGet)))

	// pprof's other views of the whole profile over HTTP (the server's
	// answer, no drawing): the function views, then those of lines and
	// addresses, on the workers' function.
	views := []string{"top", "graph", "peek?f=worker", "source?f=worker", "disasm?f=worker"}
	viewMS := make([]string, len(views))
	for i, v := range views {
		d, err := timeGet(base+"pprof/all/"+v, v)
		if err != nil {
			return err
		}
		viewMS[i] = ms(d)
	}

	// The same views asked again: what returning to a view costs (pages
	// are the same for the same profile and query). The slowest of them.
	var again time.Duration
	for _, v := range views {
		d, err := timeGet(base+"pprof/all/"+v, v)
		if err != nil {
			return err
		}
		again = max(again, d)
	}

	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err
	}
	var hwm string
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			hwm = strings.Fields(l)[1]
		}
	}
	fmt.Printf(withSkipped("ready_ms=%s ready_cpu_ms=%s open_ms=%s open_cpu_ms=%s time_view_paint_ms=%s cells=%d time_data_ms=%s flamegraph_paint_ms=%s flamegraph_cpu_ms=%s range_flamegraph_first_ms=%s range_cpu_ms=%s range_flamegraph_again_ms=%s top_ms=%s graph_ms=%s peek_ms=%s source_ms=%s disasm_ms=%s views_again_max_ms=%s peak_rss_kib=%s top_paint_ms=%s idle_wait_ms=%s %s %s")+"\n",
		ms(ready), ms(readyCPU), ms(open), ms(openCPU), ms(timePaint), cells, ms(data), ms(flame), ms(flameCPU), ms(rangeFirst), ms(rangeCPU), ms(rangeAgain), viewMS[0], viewMS[1], viewMS[2], viewMS[3], viewMS[4], ms(again), hwm, ms(topPaint), ms(idle), strings.Join(append(inPlace, mapsDrawn), " "), strings.Join(split, " "))
	return nil
}

// startView starts `culprit view ARGS` in dir ("": here) and waits for
// the URL it prints: the server's base URL and process id, and stop, which
// interrupts it and waits for it to end.
func startView(culprit, dir string, args ...string) (base string, pid int, stop func(), err error) {
	cmd := exec.Command(culprit, append([]string{"view"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", 0, nil, fmt.Errorf("culprit view printed no URL: %v", err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid, stop, nil
}

// eventPages times the pages of a recording of kernel events (events,
// against eventsBase) on a server of its own: first GET of each (the
// analysis run on the server, then kept), then each page clicked on
// another, put in place of it: latency on the index, contexts atop
// latency, the off-CPU flame graph atop contexts (its page a redirect to
// pprof's flame graph) twice (its frames loaded, and loading), the
// off-CPU flame graph atop latency (no frames), latency atop the off-CPU
// flame graph.
func eventPages(bctx context.Context, culprit string) ([]string, error) {
	base, pid, stop, err := startView(culprit, "", "--base", eventsBase, events)
	if err != nil {
		return nil, err
	}
	defer stop()
	var res []string
	for _, pg := range []struct{ key, path string }{{"latency", "latency"}, {"contexts", "contexts"}, {"offcpu", "offcpu/all/flamegraph"}} {
		waitIdle(pid)
		d, err := timeGet(base+pg.path, pg.key)
		if err != nil {
			return nil, err
		}
		res = append(res, fmt.Sprintf("%s_first_get_ms=%s", pg.key, ms(d)))
	}
	// Each click waits for the page and its frames loaded (the contexts
	// page's heat map and tree), as a user sees it, but one (early): off-CPU
	// clicked on contexts as soon as the link shows, its frames loading.
	steps := []struct {
		what, from, link, drawn string
		early                   bool
	}{
		{"latency_index_swap", "", `#pages a[href="latency"]`, `#latency pre`, false},
		{"contexts_swap", "latency", `#nav a[href="contexts"]`, `#paths pre`, false},
		{"offcpu_swap", "contexts", `#nav a[href="offcpu"]`, `#stack-chart .boxtext`, false},
		{"offcpu_early_swap", "contexts", `#nav a[href="offcpu"]`, `#stack-chart .boxtext`, true},
		{"offcpu_latency_swap", "latency", `#nav a[href="offcpu"]`, `#stack-chart .boxtext`, false},
		{"latency_offcpu_swap", "offcpu/all/flamegraph", `#culprit-nav a[href$="/latency"]`, `#latency pre`, false},
	}
	// Builds before these pages were put in place load them: not timed.
	if err := chromedp.Do(bctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`#pages a`))); err != nil {
		return nil, fmt.Errorf("index: %v", err)
	}
	if ok, _ := chromedp.Run(bctx, chromedp.Evaluate[bool](`!!window.culpritSwap && (window.culpritSwap.own || []).includes("latency")`)); !ok {
		for _, st := range steps {
			skip(st.what, "the build loads the kernel events' pages instead of putting them in place")
		}
		return res, nil
	}
	for _, st := range steps {
		if ok, err := openWith(bctx, base+st.from, st.link, st.what); err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		if !st.early {
			if err := waitFor(bctx, `document.readyState === "complete"`); err != nil {
				return nil, fmt.Errorf("%s: %v", st.from, err)
			}
			waitIdle(pid)
		}
		m, err := interaction(bctx, pid, st.what,
			// The link's own click: a click through a redirect, if the
			// page is loaded, could wait on it for good.
			func() error {
				_, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(document.querySelector(`+strconv.Quote(st.link)+`).click(), true)`))
				return err
			},
			`!!document.documentElement.dataset.culpritSwapped && !!document.querySelector(`+strconv.Quote(st.drawn)+`)`,
			swapTiming)
		if err != nil {
			return nil, fmt.Errorf("%s from %q: %v", st.what, st.from, err)
		}
		res = append(res, m)
	}
	return res, nil
}

// skipped names what this run did not time because the build timed
// lacks it (a page, a link, a page put in place rather than loaded):
// bench/view.sh pairs builds of different ages, and each is timed on
// what it has. Printed as skipped=WHAT,... and said on stderr.
var skipped []string

// withSkipped is line with skipped=WHAT,... when something was.
func withSkipped(line string) string {
	if len(skipped) == 0 {
		return line
	}
	return line + " skipped=" + strings.Join(skipped, ",")
}

// skip notes that what is not timed, and why.
func skip(what, why string) {
	skipped = append(skipped, what)
	fmt.Fprintf(os.Stderr, "viewtime: %s not timed: %s\n", what, why)
}

// present waits, up to 10 s, until the page in ctx is loaded and the
// element sel (a CSS selector) is on it, and reports whether it is: a
// build without it is not waited for to the deadline.
func present(ctx context.Context, sel string) bool {
	t := time.Now()
	for time.Since(t) < 10*time.Second {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.readyState === "complete" && !!document.querySelector(`+strconv.Quote(sel)+`)`))
		if err == nil && ok {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// openWith loads u and reports whether sel is on it (present); when it
// is not, what is skipped.
func openWith(ctx context.Context, u, sel, what string) (bool, error) {
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		return false, fmt.Errorf("%s: %v", u, err)
	}
	if !present(ctx, sel) {
		skip(what, fmt.Sprintf("no %s on %s", sel, u))
		return false, nil
	}
	return true, nil
}

// clickAt returns the act of a click of the mouse at the middle of the
// element sel, scrolled into view now: the element is found before the
// clock starts (as a user's eye finds it), so that the time is that of
// the click, not of chromedp's queries of the page.
func clickAt(ctx context.Context, sel string) (func() error, error) {
	xy, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
		const e = document.querySelector(`+strconv.Quote(sel)+`);
		if (!e) return [];
		e.scrollIntoView({block: "nearest"});
		const r = e.getBoundingClientRect();
		return [r.left + r.width / 2, r.top + r.height / 2];
	})()`))
	if err != nil || len(xy) != 2 {
		return nil, fmt.Errorf("no %s to click: %v", sel, err)
	}
	return func() error { return chromedp.Do(ctx, chromedp.MouseClickXY(xy[0], xy[1])) }, nil
}

// The marks interaction sets on the page's window and its time view's
// frame, if it has one: a page loaded in their place has none. (A frame
// element of the page put in place is another: its window is not
// asked.)
const (
	setMark  = `(() => { window.viewtimeMark = true; const f = document.getElementById("flame"); if (f && f.contentWindow) { f.viewtimeMarked = true; f.contentWindow.viewtimeMark = true; } return true; })()`
	lostMark = `(() => { if (!window.viewtimeMark) return true; const f = document.getElementById("flame"); return !!(f && f.viewtimeMarked && f.contentWindow && !f.contentWindow.viewtimeMark); })()`
)

// interaction times what act starts in the page in ctx until the
// JavaScript expression drawn holds (asked every 5 ms), as key=value
// pairs named after what: the wall time seen from here; the page's own
// time (the expression page, culpritFlame.last or culpritSwapped: ms
// from the request to the frame drawn, and its parts: fetch, put and
// draw, or fetch, parse and run);
// the renderer's thread time in script, layout, style and all its
// tasks; and the server's (pid's) CPU time. When the build loads a
// page instead (the page's window, or its time view's frame's, is
// another), what is skipped and "" returned.
func interaction(ctx context.Context, pid int, what string, act func() error, drawn, page string) (string, error) {
	var stopTrace func() ([]traceEvent, error)
	if traceDir != "" {
		var err error
		if stopTrace, err = startTrace(ctx); err != nil {
			return "", fmt.Errorf("tracing: %v", err)
		}
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](setMark)); err != nil {
		return "", err
	}
	m0 := chromeMetrics(ctx)
	c0 := cpuTime(pid)
	t := time.Now()
	from := monoNow()
	if err := act(); err != nil {
		return "", err
	}
	if err := waitFor(ctx, `(`+lostMark+` && document.readyState === "complete") || (`+drawn+`)`); err != nil {
		return "", err
	}
	wall := time.Since(t)
	to := monoNow()
	cpu := cpuTime(pid) - c0
	if lost, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](lostMark)); lost {
		if stopTrace != nil {
			_, _ = stopTrace()
		}
		skip(what, "the build loads the page instead of putting it in place")
		return "", nil
	}
	m1 := chromeMetrics(ctx)
	own, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](page))
	if err != nil {
		return "", err
	}
	num := func(k string) float64 { v, _ := own[k].(float64); return v }
	out := fmt.Sprintf("%s_ms=%s %s_page_ms=%.0f %s_cpu_ms=%s", what, ms(wall), what, num("ms"), what, ms(cpu))
	var parts []string // the page's split of its time
	for k, v := range own {
		if _, ok := v.(float64); ok && k != "ms" {
			parts = append(parts, k)
		}
	}
	sort.Strings(parts)
	for _, k := range parts {
		out += fmt.Sprintf(" %s_%s_ms=%.0f", what, k, num(k))
	}
	if m0 != nil && m1 != nil {
		for _, k := range []string{"ScriptDuration", "LayoutDuration", "RecalcStyleDuration", "TaskDuration"} {
			out += fmt.Sprintf(" %s_%s_ms=%.0f", what, strings.ToLower(strings.TrimSuffix(k, "Duration")), (m1[k]-m0[k])*1000)
		}
	}
	if stopTrace != nil {
		evs, err := stopTrace()
		if err != nil {
			return "", fmt.Errorf("tracing: %v", err)
		}
		if err := writeTrace(filepath.Join(traceDir, what+".json"), evs); err != nil {
			return "", err
		}
		out += " " + traceSplitOf(evs, what, from, to)
	}
	return out, nil
}

// swapTiming is the page's split of a page put in place
// (window.culpritSwapped: fetch, parse, run) with the fetch's own split
// from the browser's resource timing of it: queue (fetch called → request
// sent: a connection made or waited for), connect (a new connection's
// setup, 0 when one was reused), wait (request sent → first byte of the
// answer: the server's time and the loopback's) and body (first byte →
// last). The timings are cleared after, so that the buffer never fills.
const swapTiming = `(() => {
  const s = Object.assign({}, window.culpritSwapped);
  const e = performance.getEntriesByType("resource").filter(e => e.initiatorType === "fetch").pop();
  if (e) {
    s.fetch_queue = e.requestStart - e.startTime;
    s.fetch_connect = e.connectEnd - e.connectStart;
    s.fetch_wait = e.responseStart - e.requestStart;
    s.fetch_body = e.responseEnd - e.responseStart;
  }
  performance.clearResourceTimings();
  return s;
})()`

// waitFor waits, up to a fifth of the deadline (a minute by default),
// until the JavaScript expression cond holds in the page, asking every
// 5 ms.
func waitFor(ctx context.Context, cond string) error {
	t := time.Now()
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		if err == nil && ok {
			return nil
		}
		if time.Since(t) > deadline/5 {
			return fmt.Errorf("waiting for %s: %v", cond, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// status returns the status code of a GET of u.
func status(u string) (int, error) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// timeGet times a GET of u, its body read whole; what names the page in
// an error.
func timeGet(u, what string) (time.Duration, error) {
	t := time.Now()
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", what, resp.Status)
	}
	return time.Since(t), nil
}

// timeBuilt asks for the page at u until it is built (the server
// answers a page not yet built at once, saying so: id="building") and
// returns how long that took, from its first request.
func timeBuilt(u, what string) (time.Duration, error) {
	t := time.Now()
	for {
		resp, err := http.Get(u)
		if err != nil {
			return 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%s: %s", what, resp.Status)
		}
		if !bytes.Contains(body, []byte(`id="building"`)) {
			return time.Since(t), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sampledCells returns the cells of the time view's heat map of all
// threads (its data at u) with samples from half a second on: their
// starts, and their width, in milliseconds; two at least.
func sampledCells(u string) (from []int, width int, err error) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	var data struct {
		Rows    int `json:"rows"`
		Threads []struct {
			Cells [][]int `json:"cells"`
		} `json:"threads"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&data); err != nil || data.Rows == 0 || len(data.Threads) == 0 {
		return nil, 0, fmt.Errorf("time view's data: %v", err)
	}
	width = 1000 / data.Rows
	for s, col := range data.Threads[0].Cells {
		for r, n := range col {
			if n > 0 && s*1000+r*width >= 500 {
				from = append(from, s*1000+r*width)
			}
		}
	}
	if len(from) < 2 {
		return nil, 0, fmt.Errorf("time view's data: under two cells with samples from 500 ms on")
	}
	return from, width, nil
}

// waitIdle waits, up to a tenth of the deadline (30 s by default),
// until process pid has used no CPU time for half a second, and returns
// how long it waited.
func waitIdle(pid int) time.Duration {
	t := time.Now()
	last := cpuTime(pid)
	for time.Since(t) < deadline/10 {
		time.Sleep(500 * time.Millisecond)
		c := cpuTime(pid)
		if c == last {
			break
		}
		last = c
	}
	return time.Since(t)
}

// chromeMetrics returns Chromium's run-time metrics of the page (script,
// layout and style time as the renderer's threads counted it), or nil.
func chromeMetrics(ctx context.Context) map[string]float64 {
	m := map[string]float64{}
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, performance.Enable, performance.EnableParams{TimeDomain: performance.EnableTimeDomainThreadTicks}); err != nil {
			return err
		}
		r, err := cdp.Call(ctx, t, performance.GetMetrics, cdp.Empty{})
		if err != nil {
			return err
		}
		for _, x := range r.Metrics {
			m[x.Name] = x.Value
		}
		return nil
	}))
	if err != nil {
		return nil
	}
	return m
}

// pageSplit returns where the page drawn last spent its time, as
// key=value pairs named after what: from the page's navigation timing
// (the server's answer, its transfer, parsing with pprof's script up to
// the DOM, the load event, the first paint with content) and the
// renderer's thread time in script, layout and style since m0 (the
// metrics before the navigation), with the boxes drawn and the page's
// size.
func pageSplit(ctx context.Context, what string, m0 map[string]float64) string {
	js := `(() => {
	  const n = performance.getEntriesByType('navigation')[0];
	  const p = performance.getEntriesByName('first-contentful-paint')[0];
	  return [n.responseStart - n.startTime, n.responseEnd - n.responseStart,
	    n.domInteractive - n.responseEnd, n.loadEventEnd - n.domInteractive,
	    p ? p.startTime : -1, n.transferSize || n.decodedBodySize,
	    document.querySelectorAll('#stack-chart .boxbg').length];
	})()`
	v, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](js))
	if err != nil || len(v) != 7 {
		return what + "_split=none"
	}
	out := fmt.Sprintf("%s_server_ms=%.0f %s_transfer_ms=%.0f %s_parse_ms=%.0f %s_toload_ms=%.0f %s_fcp_ms=%.0f %s_kb=%.0f %s_boxes=%.0f",
		what, v[0], what, v[1], what, v[2], what, v[3], what, v[4], what, v[5]/1024, what, v[6])
	m1 := chromeMetrics(ctx)
	if m0 != nil && m1 != nil {
		for _, k := range []string{"ScriptDuration", "LayoutDuration", "RecalcStyleDuration", "TaskDuration"} {
			d := m1[k] - m0[k]
			if d < 0 { // a new renderer: its counts start at the navigation
				d = m1[k]
			}
			out += fmt.Sprintf(" %s_%s_ms=%.0f", what, strings.ToLower(strings.TrimSuffix(k, "Duration")), d*1000)
		}
	}
	return out
}

// analysisPage is one of the analyses' pages timed: its key in the
// output, its path, what shows it drawn, and the clicks on it timed
// besides the index's.
type analysisPage struct {
	key, path, drawn string
	clicks           []pageClick
}

// pageClick is a link clicked on a page (from, below the server's
// root), timed as what: the page it leads to is drawn when drawn holds.
// An optional link may not be there (a function's name links only when
// the recordings have samples of it): then it is not timed.
type pageClick struct {
	what, from, link, drawn string
	optional                bool
}

// analysisServer is a culprit view of the analyses' inputs: its key, the
// directory it runs in ("" here), its arguments and its pages.
type analysisServer struct {
	key, dir string
	args     []string
	pages    []analysisPage
	values   bool // the recordings hold sampled values: the time view's lanes of them are timed
}

// analysisServers are the servers of the inputs given by flags.
func analysisServers() []analysisServer {
	var out []analysisServer
	if diagNormal != "" && diagBuggy != "" {
		out = append(out, analysisServer{diagKey, "", []string{"--base", diagNormal, diagBuggy}, []analysisPage{
			{diagKey, "diagnose", `#diagnosis pre`, []pageClick{
				{diagKey + "_fn_swap", "diagnose", `#diagnosis a.fn`, `#share`, false},
			}},
		}, true})
	}
	if traceRec != "" {
		args := []string{traceRec}
		if traceBase != "" {
			args = []string{"--base", traceBase, traceRec}
		}
		out = append(out, analysisServer{"trace", "", args, []analysisPage{
			{"trace", "trace", `#functions pre`, []pageClick{
				{"trace_fn_swap", "trace", `#functions a.fn`, `#share`, true},
			}},
		}, false})
	}
	if varianceRec != "" {
		out = append(out, analysisServer{"variance", "", []string{varianceRec}, []analysisPage{
			{"variance", "variance", `#variance pre`, []pageClick{
				{"variance_fn_swap", "variance", `#variance a.fn`, `#share`, true},
			}},
		}, false})
	}
	if storeDir != "" {
		out = append(out, analysisServer{"store", storeDir, nil, []analysisPage{
			{"history", "history", `#runs pre`, []pageClick{
				{"models_history_swap", "history", `#nav a[href="models"]`, `#models pre`, false},
			}},
			{"models", "models", `#models pre`, []pageClick{
				// Another commit's check and models: the oldest's.
				{"history_rev_swap", "models", `#commits tr:last-child a.check`, `#check pre`, false},
				{"models_rev_swap", "models", `#commits tr:last-child a.models`, `#models pre`, false},
			}},
		}, false})
	}
	return out
}

// analysisPages times the pages of the analyses' inputs, a server of
// their own each: culprit view started → URL printed (ready) and → the
// index drawn (open); then each page's first GET at once (what a click
// as soon as the index shows waits: the build ahead of use, the analysis
// run, if it has not ended); then, the server idle, each page loaded
// afresh (paint: navigation → drawn, and the renderer's split), clicked on
// the index and put in place, twice (first and again), and the links on
// it timed, put in place.
func analysisPages(bctx context.Context, culprit string) ([]string, error) {
	var res []string
	for _, sv := range analysisServers() {
		r, err := analysisServerPages(bctx, culprit, sv)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", sv.key, err)
		}
		res = append(res, r...)
	}
	return res, nil
}

func analysisServerPages(bctx context.Context, culprit string, sv analysisServer) ([]string, error) {
	if sv.dir != "" && strings.Contains(culprit, "/") { // a path from here
		abs, err := filepath.Abs(culprit)
		if err != nil {
			return nil, err
		}
		culprit = abs
	}
	start := time.Now()
	base, pid, stop, err := startView(culprit, sv.dir, sv.args...)
	if err != nil {
		return nil, err
	}
	defer stop()
	ready := time.Since(start)
	readyCPU := cpuTime(pid)
	if err := chromedp.Do(bctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`#pages a`))); err != nil {
		return nil, fmt.Errorf("index: %v", err)
	}
	open := time.Since(start)
	res := []string{fmt.Sprintf("%s_ready_ms=%s %s_ready_cpu_ms=%s %s_open_ms=%s %s_open_cpu_ms=%s", sv.key, ms(ready), sv.key, ms(readyCPU), sv.key, ms(open), sv.key, ms(cpuTime(pid)))}
	if sv.values {
		// The time view opened at once: its maps drawn, then every lane
		// of values (each asked for once the maps are drawn).
		t := time.Now()
		if err := chromedp.Do(bctx, chromedp.Navigate(base+"time"), chromedp.WaitVisible(chromedp.CSS(`#maps svg.heat`))); err != nil {
			return nil, fmt.Errorf("time view: %v", err)
		}
		maps := time.Since(t)
		if err := waitFor(bctx, `document.querySelectorAll("#lanes svg.lane.values").length > 0 && !document.querySelector("#lanes svg.lane.values.pending")`); err != nil {
			return nil, err
		}
		lanes := time.Since(t)
		n, _ := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#lanes svg.lane.values polyline").length`))
		res = append(res, fmt.Sprintf("%s_time_paint_ms=%s %s_time_lanes_ms=%s %s_time_lanes=%d", sv.key, ms(maps), sv.key, ms(lanes), sv.key, n))
		// A range selected in the maps (the first column's cells: a
		// second, or several of a recording longer than the maps'
		// columns; the first cell's of a shorter one), the server idle: its
		// lanes of values drawn (each asked for again), twice (the
		// second range another).
		// (A build whose lanes draw the whole recording only has no
		// showLanes: not timed.)
		hasRange, _ := chromedp.Run(bctx, chromedp.Evaluate[bool](`typeof showLanes === "function"`))
		for i, cells := range []string{"0, data.rows - 1", "data.rows, 2 * data.rows - 1"} {
			if !hasRange {
				break
			}
			waitIdle(pid)
			t := time.Now()
			if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
				const svg = document.querySelector("#maps svg.heat");
				const click = k => { k = Math.min(k, data.seconds * data.rows - 1); const [x, y] = cellCenter(0, k); svg.dispatchEvent(new MouseEvent("click", {clientX: x, clientY: y, bubbles: true})); };
				for (const k of [`+cells+`]) click(k);
				return true;
			})()`)); err != nil {
				return nil, fmt.Errorf("time view range: %v", err)
			}
			if err := waitFor(bctx, `!!document.getElementById("lanes").dataset.range && !document.querySelector("#lanes svg.lane.values.pending")`); err != nil {
				return nil, err
			}
			res = append(res, fmt.Sprintf("%s_lanes_range%d_ms=%s", sv.key, i+1, ms(time.Since(t))))
		}
		if err := chromedp.Do(bctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`#pages a`))); err != nil {
			return nil, fmt.Errorf("index: %v", err)
		}
	}
	var pages []analysisPage // those the build serves
	for _, pg := range sv.pages {
		if code, err := status(base + pg.path); err != nil {
			return nil, err
		} else if code == http.StatusNotFound {
			skip(pg.key, "the build has no page "+pg.path)
			continue
		}
		pages = append(pages, pg)
		d, err := timeGet(base+pg.path, pg.key)
		if err != nil {
			return nil, err
		}
		b, err := timeBuilt(base+pg.path, pg.key)
		if err != nil {
			return nil, err
		}
		res = append(res, fmt.Sprintf("%s_first_get_ms=%s %s_built_ms=%s", pg.key, ms(d), pg.key, ms(b)))
	}
	// The builds ahead of use end; the whole build's CPU time.
	waitIdle(pid)
	res = append(res, fmt.Sprintf("%s_built_cpu_ms=%s", sv.key, ms(cpuTime(pid))))
	for _, pg := range pages {
		m0 := chromeMetrics(bctx)
		t := time.Now()
		if err := chromedp.Do(bctx, chromedp.Navigate(base+pg.path)); err != nil {
			return nil, fmt.Errorf("%s: %v", pg.path, err)
		}
		if !present(bctx, pg.drawn) {
			skip(pg.key, fmt.Sprintf("no %s on %s", pg.drawn, pg.path))
			continue
		}
		res = append(res, fmt.Sprintf("%s_paint_ms=%s", pg.key, ms(time.Since(t))), pageSplit(bctx, pg.key, m0))
		clicks := []pageClick{
			{pg.key + "_index_swap", "", `#pages a[href="` + pg.path + `"]`, pg.drawn, false},
			{pg.key + "_index_again_swap", "", `#pages a[href="` + pg.path + `"]`, pg.drawn, false},
		}
		for _, c := range append(clicks, pg.clicks...) {
			m, err := clickInPlace(bctx, pid, base, c)
			if err != nil {
				return nil, err
			}
			if m != "" {
				res = append(res, m)
			}
		}
	}
	return res, nil
}

// clickInPlace loads the page c.from, waits until it and its frames are
// loaded and the server (pid) idle, and times c's link clicked until the
// page it leads to is put in place and drawn.
func clickInPlace(bctx context.Context, pid int, base string, c pageClick) (string, error) {
	if err := chromedp.Do(bctx, chromedp.Navigate(base+c.from)); err != nil {
		return "", fmt.Errorf("%s: %v", c.from, err)
	}
	if err := waitFor(bctx, `document.readyState === "complete"`); err != nil {
		return "", fmt.Errorf("%s: %v", c.from, err)
	}
	if ok, _ := chromedp.Run(bctx, chromedp.Evaluate[bool](`!!document.querySelector(`+strconv.Quote(c.link)+`)`)); !ok {
		if !c.optional {
			skip(c.what, fmt.Sprintf("no %s on %s", c.link, c.from))
		}
		return "", nil
	}
	waitIdle(pid)
	m, err := interaction(bctx, pid, c.what,
		func() error {
			_, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(document.querySelector(`+strconv.Quote(c.link)+`).click(), true)`))
			return err
		},
		`!!document.documentElement.dataset.culpritSwapped && !!document.querySelector(`+strconv.Quote(c.drawn)+`)`,
		swapTiming)
	if err != nil {
		return "", fmt.Errorf("%s from %q: %v", c.what, c.from, err)
	}
	return m, nil
}
