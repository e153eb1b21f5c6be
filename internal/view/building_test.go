package view

import (
	"context"
	"io"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/culprit-dev/culprit/internal/analysis/introperf"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestPageBuildingBrowser checks, in headless Chromium, that a page
// clicked while its analysis runs is put in place saying so, and then put
// in place again by itself once the analysis is over, in the same
// document and the same entry of the history.
func TestPageBuildingBrowser(t *testing.T) {
	path := testutil.NeedTool(t, "chromium")
	release := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	in := Inputs{Profile: &profile.Profile{}, Names: []string{"a.rec"},
		Latency: func(Range) (*introperf.Result, error) {
			<-release
			return &introperf.Result{Tree: introperf.NewTree(introperf.NewFuncTable())}, nil
		}}
	s, err := New(in, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	base := hs.URL + s.Path()

	bctx, eval, wait := headless(t, path)
	if err := chromedp.Do(bctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`#pages a[href="latency"]`))); err != nil {
		t.Fatal(err)
	}
	before := eval(`(() => { window.culpritMark = "index"; return history.length; })()`)
	eval(`(document.querySelector('#pages a[href="latency"]').click(), true)`)
	wait(`!!document.getElementById("building") && location.href === ` + strconv.Quote(base+"latency"))
	if got := eval(`[String(window.culpritMark), history.length]`).([]any); got[0] != "index" || got[1].(float64) != before.(float64)+1 {
		t.Fatalf("the page being built: marked %v, history %v entries (before %v); want it put in place of the index, one entry pushed", got[0], got[1], before)
	}
	released = true
	close(release)
	wait(`!!document.querySelector("#latency pre")`)
	if got := eval(`[String(window.culpritMark), history.length, location.href, document.documentElement.dataset.culpritSwapped || ""]`).([]any); got[0] != "index" ||
		got[1].(float64) != before.(float64)+1 || got[2] != base+"latency" || got[3] != base+"latency" {
		t.Errorf("the page once built: marked %v, history %v entries (before %v), at %v, put in place %q; want it put in place at the same URL, no entry pushed", got[0], got[1], before, got[2], got[3])
	}
}

// headless starts headless Chromium (path) for a test: its context, eval
// (the value of a JavaScript expression) and wait (until a JavaScript
// condition holds; a hang guard of 4 minutes, not a timing: the machine
// may be busy).
func headless(t *testing.T, path string) (context.Context, func(string) any, func(string)) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 900),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true))
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	eval := func(expr string) any {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[any](expr))
		if err != nil {
			t.Fatalf("evaluating %s: %v", expr, err)
		}
		return v
	}
	wait := func(cond string) {
		t.Helper()
		for {
			if ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](cond)); err == nil && ok {
				return
			}
			select {
			case <-bctx.Done():
				t.Fatalf("waiting for %s: %v", cond, bctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return bctx, eval, wait
}
