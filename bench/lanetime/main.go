// Command lanetime measures what a range selected in culprit view's time
// view costs the browser: headless Chromium (through chromedp) opens the
// time view of a recording (with its base run), waits until every lane of
// values is drawn, then selects ranges of cells (the first column: a
// second, or several of a long recording; the second; the first again),
// each twice: its lanes only (how=lanes: the
// range selected and its lanes drawn, as a click does, without the flame
// graph of the range the click loads too, in the same renderer) and by
// clicks on the map (how=click); for each, the renderer's own thread time
// (Performance.getMetrics' TaskDuration in thread ticks, and its script,
// layout and style parts) from the click until every lane of the range is
// drawn and painted, and the wall time. The page waits for itself (no
// polling from here, which would be counted as the renderer's work). One
// line of key=value per range.
//
//	go run ./bench/lanetime -culprit ./culprit -chromium /usr/bin/chromium base.rec rec.rec
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
)

func main() {
	culprit := flag.String("culprit", "culprit", "the culprit binary")
	chromium := flag.String("chromium", "chromium", "the Chromium binary")
	settle := flag.Duration("settle", 20*time.Second, "the wait after the lanes are drawn (the server's builds ahead finish)")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: lanetime [-culprit BIN] [-chromium BIN] BASE.rec FILE.rec")
		os.Exit(2)
	}
	if err := run(*culprit, *chromium, *settle, flag.Arg(0), flag.Arg(1)); err != nil {
		fmt.Fprintln(os.Stderr, "lanetime:", err)
		os.Exit(1)
	}
}

// metrics are the renderer's metrics, in thread ticks.
func metrics(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, performance.Enable, performance.EnableParams{TimeDomain: performance.EnableTimeDomainThreadTicks}); err != nil {
			return err
		}
		r, err := cdp.Call(ctx, t, performance.GetMetrics, cdp.Empty{})
		if err != nil {
			return err
		}
		for _, m := range r.Metrics {
			out[m.Name] = m.Value
		}
		return nil
	}))
	return out, err
}

func run(culprit, chromium string, settle time.Duration, base, rec string) error {
	cmd := exec.Command(culprit, "view", "--base", base, rec)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Signal(syscall.SIGINT); cmd.Wait() }()
	u, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("culprit view printed no URL: %v", err)
	}
	u = strings.TrimSpace(u)
	dir, err := os.MkdirTemp("", "lanetime")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium), chromedp.UserDataDir(dir),
		chromedp.WindowSize(1400, 1000), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// drawn resolves once the lanes of values are drawn (of a range when
	// ranged) and painted: polled in the page every 20 ms.
	const drawn = `(ranged) => new Promise(res => {
		const done = () => (!ranged || !!document.getElementById("lanes").dataset.range) && document.querySelectorAll("#lanes svg.lane.values").length > 0 && !document.querySelector("#lanes svg.lane.values.pending");
		const check = () => done() ? requestAnimationFrame(() => setTimeout(res, 0)) : setTimeout(check, 20);
		check();
	})`
	if err := chromedp.Do(ctx, chromedp.Navigate(u+"time")); err != nil {
		return fmt.Errorf("time view: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(`+drawn+`)(false).then(() => true)`, chromedp.EvalAwaitPromise)); err != nil {
		return fmt.Errorf("time view: %v", err)
	}
	lanes, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#lanes svg.lane.values").length`))
	if err != nil {
		return err
	}
	time.Sleep(settle)
	type step struct{ how, cells string }
	var steps []step
	for _, how := range []string{"lanes", "click"} {
		for _, cells := range []string{"0, data.rows - 1", "data.rows, 2 * data.rows - 1", "0, data.rows - 1"} {
			steps = append(steps, step{how, cells})
		}
	}
	for i, st := range steps {
		act := `const svg = document.querySelector("#maps svg.heat");
			const click = k => { k = Math.min(k, data.seconds * data.rows - 1); const [x, y] = cellCenter(0, k); svg.dispatchEvent(new MouseEvent("click", {clientX: x, clientY: y, bubbles: true})); };
			for (const k of [` + st.cells + `]) click(k);`
		if st.how == "lanes" {
			act = `select(` + st.cells + `); showLanes(sel);`
		}
		m0, err := metrics(ctx)
		if err != nil {
			return err
		}
		wall, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => {
			const t0 = performance.now();
			`+act+`
			return (`+drawn+`)(true).then(() => performance.now() - t0);
		})()`, chromedp.EvalAwaitPromise))
		if err != nil {
			return fmt.Errorf("range %d: %v", i+1, err)
		}
		m1, err := metrics(ctx)
		if err != nil {
			return err
		}
		d := func(k string) float64 { return (m1[k] - m0[k]) * 1000 }
		load, _ := os.ReadFile("/proc/loadavg")
		fmt.Printf("how=%s range=%d lanes=%d thread_ms=%.0f script_ms=%.0f layout_ms=%.0f style_ms=%.0f layouts=%.0f wall_ms=%.0f load=%s\n",
			st.how, i%3+1, lanes, d("TaskDuration"), d("ScriptDuration"), d("LayoutDuration"), d("RecalcStyleDuration"), m1["LayoutCount"]-m0["LayoutCount"], wall, strings.Fields(string(load))[0])
		time.Sleep(2 * time.Second)
	}
	return nil
}
