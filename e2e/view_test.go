package e2e

import (
	"bufio"
	"bytes"
	"context"
	"html"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// recordThreads records threads.c: three threads spinning in spin_a,
// spin_b and spin_c, each for at least about 0.5 s of CPU time (at most
// about 1 ns an iteration), so that the run spans many 20 ms cells of the
// time view however idle the machine.
func recordThreads(t *testing.T) string {
	t.Helper()
	testutil.NeedRoot(t)
	bin := testutil.C(t, "threads", []string{"threads.c"}, "-O2", "-g", "-pthread")
	r := rec(t)
	mustRun(t, "record", "-o", r, "--", bin, "500000000")
	return r
}

// lockedBuffer is a process's standard error, read while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startView starts culprit view and returns the URL it prints and its
// standard error; the server is interrupted when the test ends.
func startView(t *testing.T, args ...string) (string, *lockedBuffer) {
	t.Helper()
	return startViewIn(t, "", args...)
}

// startViewIn is startView in the directory dir.
func startViewIn(t *testing.T, dir string, args ...string) (string, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(culprit, append([]string{"view"}, args...)...)
	cmd.Dir = dir
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil {
			t.Errorf("culprit view after SIGINT: %v\nstderr:\n%s", err, stderr)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("culprit view printed no URL: %v\nstderr:\n%s", err, stderr)
	}
	return strings.TrimSpace(line), stderr
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestViewSecurity(t *testing.T) {
	r := recordThreads(t)
	base, stderr := startView(t, r)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("culprit view printed %q: %v", base, err)
	}
	if u.Hostname() != "127.0.0.1" {
		t.Errorf("default address %s, want the loopback 127.0.0.1", u.Host)
	}
	if stderr.String() != "" {
		t.Errorf("culprit view on loopback wrote to stderr:\n%s", stderr)
	}
	token := strings.Trim(u.Path, "/")
	if len(token) < 32 {
		t.Fatalf("URL %s carries no token of at least 128 bits", base)
	}
	root := "http://" + u.Host
	// A token one character off (not the token itself when it ends in 0).
	wrong := token[:len(token)-1] + "0"
	if wrong == token {
		wrong = token[:len(token)-1] + "1"
	}
	if code, body := get(t, base); code != 200 || !strings.Contains(body, "Flame graph") {
		t.Fatalf("GET %s: %d, want the index page\n%s", base, code, body)
	}
	for _, p := range []string{"/", "/time", "/time/data", "/pprof/all/flamegraph", "/pprof/all/download",
		"/pprof/all/flamegraph.json", "/pprof/all/flamegraph.trimmed.json",
		"/offcpu/flamegraph", "/latency", "/contexts/heatmap", "/contexts/cct", "/diagnose", "/trace", "/variance",
		"/history", "/models", "/latency?from=0s&to=1s",
		"/" + wrong + "/", "/x" + token + "/time/data", "/time/data?token=" + token} {
		if code, _ := get(t, root+p); code != http.StatusForbidden {
			t.Errorf("GET %s without the token: %d, want 403", p, code)
		}
	}

	// No parameter names a file the server then reads: files of the
	// user's (a source and an object), named every way a request can,
	// are never opened, on this server and on servers where the pages
	// of diagnose (sampled values), traced calls and the variance tree
	// have their inputs.
	sec := newSecrets(t)
	noFileRead(t, base, sec)
	c := vprofCases[0]
	bin := c.bin(t)
	normal, buggy := rec(t), rec(t)
	mustRun(t, append([]string{"record", "--values", "-o", normal, "--", bin}, c.normal...)...)
	mustRun(t, append([]string{"record", "--values", "-o", buggy, "--", bin}, c.buggy...)...)
	diag, _ := startView(t, "--base", normal, buggy)
	if code, body := get(t, diag); code != 200 || !strings.Contains(body, `href="diagnose"`) {
		t.Fatalf("GET %s: %d, want an index linking to diagnose\n%s", diag, code, body)
	}
	noFileRead(t, diag, sec)
	trace := rec(t)
	threads := testutil.C(t, "threads", []string{"threads.c"}, "-O2", "-g", "-pthread")
	mustRun(t, "trace", "-f", "spin_*", "-o", trace, "--", threads, "10000000")
	traced, _ := startView(t, trace)
	noFileRead(t, traced, sec)
	varpool := testutil.C(t, "varpool", []string{"varpool.c"}, "-O2", "-g", "-pthread")
	intervals := rec(t)
	mustRun(t, "variance", "--start", "handle", "--round-intervals", "500", "-o", intervals, "--", varpool, "dominant", "200", "2")
	variance, _ := startView(t, intervals)
	noFileRead(t, variance, sec)

	// pprof's settings are not written through the server.
	resp, err := http.Post(base+"pprof/all/saveconfig?config=x", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Errorf("POST saveconfig: 200, want it refused")
	}

	// Another address than loopback is served only when asked, with a warning.
	// The warning is written before the URL, but reaches the buffer
	// through the copying goroutine of exec: wait for it.
	_, warn := startView(t, "--listen", "0.0.0.0:0", r)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(warn.String(), "warning") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(warn.String(), "warning") {
		t.Errorf("culprit view --listen 0.0.0.0:0 gave no warning; stderr:\n%s", warn)
	}
}

// secrets are files of the user's that no request may make culprit view
// open: a source whose contents hold marker and an object file no
// recording names, in a directory watched for opens.
type secrets struct {
	secret, object, marker string
	watch                  func() []string // the files opened since its last call
}

// newSecrets writes the secret files and starts watching them.
func newSecrets(t *testing.T) secrets {
	t.Helper()
	dir := t.TempDir()
	sec := secrets{secret: filepath.Join(dir, "secret.c"), object: filepath.Join(dir, "secret.o"),
		marker: "culprit_view_secret_marker"}
	if err := os.WriteFile(sec.secret, []byte("int "+sec.marker+";\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	elf, err := os.ReadFile(testutil.C(t, "threads", []string{"threads.c"}, "-O2", "-g", "-pthread"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sec.object, elf, 0o700); err != nil {
		t.Fatal(err)
	}
	sec.watch = watchOpens(t, dir)
	// The watch sees an open (the test's own), or it proves nothing.
	if _, err := os.ReadFile(sec.secret); err != nil {
		t.Fatal(err)
	}
	if seen := sec.watch(); !slices.Contains(seen, sec.secret) {
		t.Fatalf("inotify saw %v when the test read %s", seen, sec.secret)
	}
	return sec
}

// noFileRead asks the server at base for the secret files through every
// parameter and path element of its pages and pprof's, with their paths
// absolute and relative (climbing out of any directory), and fails when
// a page shows the secret source's contents or when either file was
// opened.
func noFileRead(t *testing.T, base string, sec secrets) {
	t.Helper()
	sec.watch() // what came before is another server's
	var paths []string
	for _, f := range []string{sec.secret, sec.object} {
		q := url.QueryEscape(f)
		rel := strings.Repeat("../", 12) + strings.TrimPrefix(f, "/")
		rq := url.QueryEscape(rel)
		for _, v := range []string{q, rq} {
			paths = append(paths,
				"pprof/all/source?f=.&source_path="+v,
				"pprof/all/source?f="+v,
				"pprof/all/source?f=.&trim_path="+v,
				"pprof/all/disasm?f=.&o="+v,
				"pprof/all/disasm?f="+v,
				"pprof/all/peek?f="+v,
				"pprof/all/top?f="+v+"&p="+v,
				"pprof/all/flamegraph?f="+v+"&output="+v,
				"pprof/all/download?output="+v,
				"pprof/0s-1s/source?f=.&source_path="+v,
				"offcpu/source?f=.&source_path="+v,
				"diagnose?normal="+v+"&buggy="+v,
				"diagnose?from=0s&to=1s&normal="+v,
				"trace?file="+v+"&f="+v,
				"variance?i="+v,
				"latency?from="+v+"&to="+v,
				"contexts/heatmap?base="+v,
				"time?f="+v,
				"time/data?f="+v+"&file="+v,
				"time/values?src=0&from="+v+"&to="+v,
				"time/values?src="+v,
				"function?f="+v,
				"function?f=main&from=0s&to=1s&object="+v,
				"history?store="+v+"&rev="+v,
				"models?store="+v+"&rev="+v,
			)
		}
		for _, prefix := range []string{"pprof/", "pprof/all/", "time/", "offcpu/", "contexts/", "diagnose/", "function/", ""} {
			paths = append(paths, prefix+url.PathEscape(rel), prefix+strings.ReplaceAll(url.PathEscape(rel), "/", "%2F"))
		}
	}
	for _, p := range paths {
		code, body := get(t, base+p)
		if strings.Contains(body, sec.marker) {
			t.Errorf("GET %s (%d) served the contents of %s", p, code, sec.secret)
		}
		if opened := sec.watch(); len(opened) > 0 {
			t.Errorf("GET %s (%d): the server opened %s", p, code, strings.Join(opened, ", "))
		}
	}
}

// watchOpens watches the files in dir with inotify and returns what
// reports the names of those opened since it last reported.
func watchOpens(t *testing.T, dir string) func() []string {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_OPEN|syscall.IN_ACCESS); err != nil {
		t.Fatalf("inotify on %s: %v", dir, err)
	}
	return func() []string {
		var names []string
		buf := make([]byte, 64<<10)
		for {
			n, err := syscall.Read(fd, buf)
			if err == syscall.EAGAIN || n <= 0 {
				return names
			}
			if err != nil {
				t.Fatalf("reading inotify: %v", err)
			}
			for b := buf[:n]; len(b) >= syscall.SizeofInotifyEvent; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&b[0]))
				end := syscall.SizeofInotifyEvent + int(ev.Len)
				name := strings.TrimRight(string(b[syscall.SizeofInotifyEvent:end]), "\x00")
				names = append(names, filepath.Join(dir, name))
				b = b[end:]
			}
		}
	}
}

// chrome starts headless Chromium for the test.
func chrome(t *testing.T) context.Context {
	t.Helper()
	path := testutil.NeedTool(t, "chromium")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	}
	// Generous: the machine may be busy with other tests (a test that
	// records several programs and opens a dozen pages, at load 30, took
	// 4 minutes).
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return bctx
}

var totalRE = regexp.MustCompile(`Total samples = ([0-9.]+)(ms|s)`)

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitJS waits until the JavaScript expression cond holds in the page,
// asking again every 100 ms: each evaluation reads whichever document is
// shown, also after a navigation the page itself started.
func waitJS(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		if err == nil && ok {
			return
		}
		if ctx.Err() != nil {
			loc, _ := chromedp.Run(context.WithoutCancel(ctx), chromedp.Evaluate[string](`location.href`))
			t.Fatalf("waiting for %s at %s: %v", cond, loc, ctx.Err())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fnLinked checks that the page shown has function names linked (the
// elements sel finds) and that the first link opens that function's page.
func fnLinked(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	links := eval[[][]string](t, ctx, `Array.from(document.querySelectorAll(`+strconv.Quote(sel)+`)).map(a => [a.textContent, new URL(a.getAttribute("href"), location.href).href])`)
	if len(links) == 0 {
		t.Errorf("%s: no function name is a link (%s)", what, sel)
		return
	}
	name, href := links[0][0], links[0][1]
	if code, body := get(t, href); code != 200 || !strings.Contains(body, "<code>"+html.EscapeString(name)+"</code>") {
		t.Errorf("%s: the link of %s (%s) answers %d, want its function page:\n%.400s", what, name, href, code, body)
	}
}

// flameGraph opens pprof's flame graph at u and returns the text of its
// boxes and its total in ms.
func flameGraph(t *testing.T, ctx context.Context, u string) (string, float64) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(u),
		chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxtext`)),
	); err != nil {
		t.Fatalf("flame graph %s: %v", u, err)
	}
	n := eval[int](t, ctx, `document.querySelectorAll("#stack-chart .boxtext").length`)
	boxes := eval[string](t, ctx, `Array.from(document.querySelectorAll("#stack-chart .boxtext")).map(e => e.textContent).join("\n")`)
	details := eval[string](t, ctx, `document.body.textContent`)
	if n < 3 {
		t.Errorf("flame graph %s: %d boxes, want a stack of them", u, n)
	}
	m := totalRE.FindStringSubmatch(details)
	if m == nil {
		t.Fatalf("flame graph %s: no total in its details", u)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	if m[2] == "s" {
		v *= 1000
	}
	return boxes, v
}

// flameTrimmed checks that pprof's flame graph at u, whose stacks culprit
// trims to those its first view draws, draws what pprof's page of all of
// them (asked for with a pivot, p) draws; and that a frame clicked there,
// which pprof's script draws without the server, is drawn as pprof's
// page of all the stacks draws it.
func flameTrimmed(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	const drawn = `Array.from(document.querySelectorAll("#stack-chart .boxbg")).map(e => [e.style.left, e.style.top, e.style.width, e.textContent].join(" ")).join("\n")`
	drawnAt := func(u string) string {
		if err := chromedp.Do(ctx, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxtext`))); err != nil {
			t.Fatalf("flame graph %s: %v", u, err)
		}
		return eval[string](t, ctx, drawn)
	}
	whole := drawnAt(u + "?p=")
	if got := drawnAt(u); got != whole {
		t.Errorf("flame graph: drawn\n%s\nwhile pprof's page of all stacks draws\n%s", got, whole)
	}
	// The narrowest box named: pivoted there, what was trimmed below it
	// is widest.
	const click = `(() => {
		const boxes = Array.from(document.querySelectorAll("#stack-chart .boxbg")).filter(e => e.textContent !== "");
		boxes.sort((a, b) => parseFloat(a.style.width) - parseFloat(b.style.width));
		for (const k of ["mousedown", "click"]) boxes[0].dispatchEvent(new MouseEvent(k, {bubbles: true, clientX: 1, clientY: 1}));
		return new URL(location.href).searchParams.get("p");
	})()`
	p := eval[string](t, ctx, click)
	wholePivot := drawnAt(u + "?p=" + url.QueryEscape(p))
	drawnAt(u)
	if p2 := eval[string](t, ctx, click); p2 != p || p == "" {
		t.Fatalf("flame graph: the narrowest box clicked, the page pivots to %q, then %q", p, p2)
	}
	waitJS(t, ctx, drawn+" === "+strconv.Quote(wholePivot))
}

func TestViewBrowser(t *testing.T) {
	ctx := chrome(t)
	r := recordThreads(t)
	base, _ := startView(t, r)

	// pprof's flame graph of the whole recording names the spinning functions.
	boxes, total := flameGraph(t, ctx, base+"pprof/all/flamegraph")
	for _, fn := range []string{"spin_a", "spin_b", "spin_c", "main"} {
		if !strings.Contains(boxes, fn) {
			t.Errorf("pprof flame graph: no box %s; boxes:\n%s", fn, boxes)
		}
	}
	flameTrimmed(t, ctx, base+"pprof/all/flamegraph")

	// pprof's pages link back to culprit's, and a function chosen there
	// (pprof's search box) goes along to the time view, whose maps then
	// count only its samples: those of the one thread that runs spin_a.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"pprof/all/top"),
		chromedp.WaitVisible(chromedp.CSS(`#culprit-nav a[data-fn][href$="time"]`)),
		chromedp.SendKeys(chromedp.CSS(`#search`), "spin_a"),
	); err != nil {
		t.Fatalf("pprof's top view: %v", err)
	}
	navText := eval[string](t, ctx, `document.getElementById("culprit-nav").textContent`)
	for _, want := range []string{"index", "Time view"} {
		if !strings.Contains(navText, want) {
			t.Errorf("pprof's page: culprit's links %q have no %q", navText, want)
		}
	}
	timeHref := eval[string](t, ctx, `(() => { const a = document.querySelector('#culprit-nav a[data-fn][href$="time"]'); a.dispatchEvent(new Event("mouseenter")); return a.href; })()`)
	if u, err := url.Parse(timeHref); err != nil || u.Query().Get("f") != "spin_a" || !strings.HasSuffix(u.Path, "/time") {
		t.Fatalf("pprof's page: time view link %q after searching spin_a, want time?f=spin_a", timeHref)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#culprit-nav a[data-fn][href*="time"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#maps svg.heat path.cell`)),
	); err != nil {
		t.Fatalf("time view of spin_a: %v", err)
	}
	focused := eval[[]float64](t, ctx, `[data.threads.length, data.samples, data.threads.length > 1 ? data.threads[1].tid : 0]`)
	shownFn := eval[string](t, ctx, `document.getElementById("fn").textContent`)
	whole := eval[[]float64](t, ctx, `(() => { const x = new XMLHttpRequest(); x.open("GET", "time/data", false); x.send(); const d = JSON.parse(x.responseText);
		return [d.samples, (d.threads.find(t => t.tid === `+strconv.Itoa(int(focused[2]))+`) || {samples: 0}).samples]; })()`)
	if focused[0] != 2 || focused[1] <= 0 || focused[1] > whole[1] || focused[1] >= whole[0] || shownFn != "spin_a" {
		t.Errorf("time view of spin_a (%q): %v threads drawn, %v samples; want all threads and spin_a's thread, at most that thread's %v of the %v samples",
			shownFn, focused[0]-1, focused[1], whole[1], whole[0])
	}

	// The function page, from pprof's page too: spin_a's samples, all of
	// one thread, and the links that open it elsewhere.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"pprof/all/top"),
		chromedp.WaitVisible(chromedp.CSS(`#culprit-nav a[data-fn][href$="fn"]`)),
		chromedp.SendKeys(chromedp.CSS(`#search`), "spin_a"),
	); err != nil {
		t.Fatalf("pprof's top view: %v", err)
	}
	fnHref := eval[string](t, ctx, `(() => { const a = document.querySelector('#culprit-nav a[data-fn][href$="fn"]'); a.dispatchEvent(new Event("mouseenter")); return a.href; })()`)
	if err := chromedp.Do(ctx, chromedp.Navigate(fnHref), chromedp.WaitVisible(chromedp.CSS(`#share`))); err != nil {
		t.Fatalf("function page %s: %v", fnHref, err)
	}
	fnPage := eval[[]string](t, ctx, `[document.getElementById("names").textContent, String(document.querySelectorAll("#threads tr").length),
		Array.from(document.querySelectorAll("#links a")).map(a => a.getAttribute("href")).join(" ")]`)
	if !strings.Contains(fnPage[0], "spin_a") || fnPage[1] != "1" || !strings.Contains(fnPage[2], "time?f=spin_a") || !strings.Contains(fnPage[2], "pprof/all/flamegraph?f=spin_a") {
		t.Errorf("function page of spin_a: functions %q, %s threads, links %q; want spin_a, one thread, the time view and pprof focused on it", fnPage[0], fnPage[1], fnPage[2])
	}

	// The time view, opened from the index, draws a heat map per thread.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(`#pages a[href="time"]`)),
		chromedp.Click(chromedp.CSS(`#pages a[href="time"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#maps svg.heat path.cell`)),
	); err != nil {
		t.Fatalf("time view: %v", err)
	}
	cells := eval[int](t, ctx, `data.threads[0].cells.flat().filter(v => v > 0).length`)
	// The page carries its data: what time/data answers.
	if same := eval[bool](t, ctx, `(() => { const e = document.getElementById("time-data"); if (!e) return false;
		const x = new XMLHttpRequest(); x.open("GET", "time/data", false); x.send();
		return JSON.stringify(JSON.parse(e.textContent)) === JSON.stringify(JSON.parse(x.responseText)); })()`); !same {
		t.Error("time view: the page carries no data, or not time/data's")
	}
	heads := eval[string](t, ctx, `Array.from(document.querySelectorAll("#maps h2")).map(e => e.textContent).join("\n")`)
	shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`#maps svg.heat`)))
	if err != nil {
		t.Fatalf("time view screenshot: %v", err)
	}
	// Three cells at least, so that a range from the first to the middle
	// one leaves samples out (recordThreads spans about 25 of them).
	if cells < 3 {
		t.Fatalf("time view: %d cells with samples in the all-threads map, want the recording's", cells)
	}
	if !strings.Contains(heads, "all threads") || strings.Count(heads, "tid ") < 3 {
		t.Errorf("time view: maps %q, want all threads and the three spinning ones", heads)
	}
	if colored := coloredShare(t, shot); colored < 0.01 {
		t.Errorf("time view screenshot: %.3f of its pixels colored, want a visible heat map", colored)
	}

	// The time view shows pprof's flame graph of the whole recording
	// under its maps; the page in that frame is marked, to tell whether
	// a later drawing loaded another.
	const frame = `document.getElementById("flame").contentWindow`
	waitJS(t, ctx, `(() => { const w = `+frame+`; return !!(w && w.culpritFlame && w.culpritFlame.stacks && w.document.querySelector("#stack-chart .boxtext")); })()`)
	eval[bool](t, ctx, `(`+frame+`.culpritMark = "whole") !== ""`)

	// Selecting from the first cell to the middle one links pprof's views
	// to that range, whose flame graph holds fewer samples.
	selectHalf(t, ctx)
	selText := eval[string](t, ctx, `document.getElementById("selection").textContent`)
	href := eval[string](t, ctx, `document.querySelector('#links a[data-view="flamegraph"]').getAttribute("href")`)
	if !strings.HasPrefix(selText, "Range ") || !regexp.MustCompile(`^pprof/\d+ms-\d+ms/flamegraph$`).MatchString(href) {
		t.Fatalf("after selecting a range: %q, flame graph link %q", selText, href)
	}
	// The frame draws the range's flame graph in place: the same page,
	// its URL and legend the range's, and what the range's own page,
	// loaded in the frame afterwards, draws.
	stacksURL := strings.TrimSuffix(href, "/flamegraph") + "/flamegraph.json"
	waitJS(t, ctx, `(`+frame+`.document.documentElement.dataset.culpritShown || "").endsWith("/`+stacksURL+`")`)
	inPlace := eval[[]string](t, ctx, `(() => { const w = `+frame+`; return [String(w.culpritMark), w.location.pathname, `+frameLegend+`, `+frameDrawn+`,
		w.culpritFlame && w.culpritFlame.last ? w.culpritFlame.last.key : ""]; })()`)
	if inPlace[0] != "whole" || !strings.HasSuffix(inPlace[1], "/"+href) || !strings.HasSuffix(inPlace[4], "/"+stacksURL) {
		t.Errorf("range chosen: the frame shows %s (page marked %q, its stacks %q drawn in place), want %s drawn in the page it had", inPlace[1], inPlace[0], inPlace[4], href)
	}
	// The time to the frame drawn is counted from the click in the
	// parent page (another clock's origin), before its handlers ran.
	if last := eval[[]float64](t, ctx, `[`+frame+`.culpritFlame.last.input, `+frame+`.culpritFlame.last.ms]`); !(last[0] >= last[1]-1 && last[1] > 0) {
		t.Errorf("range chosen: %v ms from the click to the frame drawn, %v ms from the request: want the first at least the second, over 0", last[0], last[1])
	}
	m := totalRE.FindStringSubmatch(inPlace[2])
	if m == nil {
		t.Fatalf("range drawn in place: no total in the frame's legend %q", inPlace[2])
	}
	part, _ := strconv.ParseFloat(m[1], 64)
	if m[2] == "s" {
		part *= 1000
	}
	if part <= 0 || part >= total {
		t.Errorf("flame graph of %s drawn in place: total %.2fms, want less than the whole recording's %.2fms", href, part, total)
	}
	if !strings.Contains(inPlace[3], "spin_") {
		t.Errorf("flame graph of %s drawn in place names no spinning function:\n%s", href, inPlace[3])
	}
	eval[bool](t, ctx, `(() => { document.getElementById("flame").src = `+frame+`.location.href; return true; })()`)
	waitJS(t, ctx, `(() => { const w = `+frame+`; return w.culpritMark === undefined && w.document.readyState === "complete" && !!w.document.querySelector("#stack-chart .boxtext"); })()`)
	loaded := eval[[]string](t, ctx, `(() => { const w = `+frame+`; return [`+frameLegend+`, `+frameDrawn+`]; })()`)
	if loaded[0] != inPlace[2] || loaded[1] != inPlace[3] {
		t.Errorf("flame graph of %s: drawn in place\n%s\n%s\nloaded\n%s\n%s", href, inPlace[2], inPlace[3], loaded[0], loaded[1])
	}

	flameFilterInPlace(t, ctx, base+"pprof/all/flamegraph", "spin_b")
	pagesInPlace(t, ctx, base+"pprof/all/", "spin_b")
	ownPagesInPlace(t, ctx, base)

	// A function's page, from the index, by its form, from pprof's
	// pages, and pprof's pages from it.
	// A function's page of a function: its share of the samples (none,
	// for a function seen only in other events' stacks) said.
	fnReady, threads := has(`form input[name="f"]`), has(`#share`)
	stepsInPlace(t, ctx, base,
		inPlaceStep{"", has(`#pages a[href="fn"]`), clickJS(`#pages a[href="fn"]`), fnReady},
		inPlaceStep{"fn", fnReady, `(() => { document.querySelector('form input[name="f"]').value = "spin_b"; document.querySelector("form button").click(); return true; })()`, threads},
		inPlaceStep{"fn?f=spin_b", threads, clickJS(`#links a[href^="pprof/all/top"]`), has(`#toptable tbody tr`)},
		inPlaceStep{"pprof/all/top", has(`#toptable tbody tr`), clickJS(`#culprit-nav a[href$="/fn"]`), fnReady},
	)
}

// ownPagesInPlace checks that culprit's own pages put the pprof page a
// link leads to in place (the index's flame graph, the flame graph atop
// the time view), in the same document and drawn as loaded afresh, and
// that back from there shows the page before.
func ownPagesInPlace(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	for _, c := range []struct{ page, link string }{
		{"", `#pprof a[href$="pprof/all/flamegraph"]`},
		{"time", `#nav a[href$="/flamegraph"]`},
	} {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+c.page), chromedp.WaitVisible(chromedp.CSS(c.link))); err != nil {
			t.Fatalf("page %q: %v", c.page, err)
		}
		eval[bool](t, ctx, `(() => { window.culpritMark = "own"; return true; })()`)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(c.link))); err != nil {
			t.Fatalf("page %q: clicking %s: %v", c.page, c.link, err)
		}
		// Put in place or loaded, the flame graph is drawn; then which.
		waitJS(t, ctx, `location.pathname.endsWith("/flamegraph") && document.readyState === "complete" && !!document.querySelector("#stack-chart .boxtext") && (window.culpritMark !== "own" || (document.documentElement.dataset.culpritSwapped || "").includes("/flamegraph"))`)
		got := eval[[]string](t, ctx, `[String(window.culpritMark), location.href, `+flameDrawn+`]`)
		if got[0] != "own" || !strings.Contains(got[1], "/flamegraph") {
			t.Fatalf("the flame graph from page %q: %s, page marked %q, want it put in place", c.page, got[1], got[0])
		}
		if !strings.Contains(got[2], "spin_") {
			t.Errorf("the flame graph from page %q, put in place, draws\n%s", c.page, got[2])
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(got[1]), chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxtext`))); err != nil {
			t.Fatalf("flame graph loaded: %v", err)
		}
		if loaded := eval[string](t, ctx, flameDrawn); loaded != got[2] {
			t.Errorf("the flame graph from page %q: put in place\n%s\nloaded\n%s", c.page, got[2], loaded)
		}
		// Back from a page put in place shows the page before it.
		if err := chromedp.Do(ctx, chromedp.Navigate(base+c.page), chromedp.WaitVisible(chromedp.CSS(c.link)), chromedp.Click(chromedp.CSS(c.link))); err != nil {
			t.Fatalf("page %q again: %v", c.page, err)
		}
		waitJS(t, ctx, `(document.documentElement.dataset.culpritSwapped || "").includes("/flamegraph")`)
		eval[bool](t, ctx, `(() => { window.culpritMark = "back"; history.back(); return true; })()`)
		waitJS(t, ctx, `!!document.querySelector(`+strconv.Quote(c.link)+`) && location.href === `+strconv.Quote(base+c.page))
		if mark := eval[string](t, ctx, `String(window.culpritMark)`); mark != "back" {
			t.Errorf("back from the flame graph to page %q: the page loaded (marked %q), want it put in place", c.page, mark)
		}
	}
	timeInPlace(t, ctx, base)
}

// timeInPlace checks that the time view is put in place of the index
// and of pprof's pages when a link leads there: in the same document, its
// maps drawn from its data, its flame graph frame and range selection
// working; and that back and forward put the index and the time view in
// place again (the time view's script run a second time in the same
// document).
func timeInPlace(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	const drawn = `location.pathname.endsWith("/time") && !!document.querySelector("#maps svg.heat path.cell")`
	const frame = `document.getElementById("flame").contentWindow`
	const frameDrawn = `(() => { const w = ` + frame + `; return !!(w && w.culpritFlame && w.culpritFlame.stacks && w.document.querySelector("#stack-chart .boxtext")); })()`
	if err := chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`#pages a[href="time"]`))); err != nil {
		t.Fatalf("index: %v", err)
	}
	eval[bool](t, ctx, `(() => { window.culpritMark = "index"; return true; })()`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#pages a[href="time"]`))); err != nil {
		t.Fatalf("index: clicking the time view: %v", err)
	}
	// Put in place or loaded, the maps are drawn; then which.
	waitJS(t, ctx, drawn)
	if got := eval[[]string](t, ctx, `[String(window.culpritMark), document.documentElement.dataset.culpritSwapped || ""]`); got[0] != "index" || got[1] != base+"time" {
		t.Fatalf("the time view from the index: page marked %q, put in place %q; want it put in place of the index", got[0], got[1])
	}
	maps := eval[string](t, ctx, `Array.from(document.querySelectorAll("#maps h2")).map(e => e.textContent).join("\n")`)
	if same := eval[bool](t, ctx, `(() => { const x = new XMLHttpRequest(); x.open("GET", "time/data", false); x.send();
		return JSON.stringify(data) === JSON.stringify(JSON.parse(x.responseText)); })()`); !same || !strings.Contains(maps, "all threads") {
		t.Errorf("the time view put in place: maps %q, its data time/data's: %v", maps, same)
	}
	// Back: the index, put in place; forward: the time view again, its
	// script run again in the same document. (Before a range is chosen:
	// the frame's entries of the history come first.)
	waitJS(t, ctx, frameDrawn)
	eval[bool](t, ctx, `(() => { history.back(); return true; })()`)
	waitJS(t, ctx, `location.href === `+strconv.Quote(base)+` && !!document.querySelector('#pages a[href="time"]')`)
	if mark := eval[string](t, ctx, `String(window.culpritMark)`); mark != "index" {
		t.Errorf("back from the time view put in place: the index loaded (marked %q), want it put in place", mark)
	}
	eval[bool](t, ctx, `(() => { history.forward(); return true; })()`)
	waitJS(t, ctx, drawn)
	again := eval[[]string](t, ctx, `[String(window.culpritMark), Array.from(document.querySelectorAll("#maps h2")).map(e => e.textContent).join("\n")]`)
	if again[0] != "index" || again[1] != maps {
		t.Errorf("forward to the time view: page marked %q, maps %q; want it put in place again, maps %q", again[0], again[1], maps)
	}
	waitJS(t, ctx, frameDrawn)
	selectHalf(t, ctx)
	href := eval[string](t, ctx, `document.querySelector('#links a[data-view="flamegraph"]').getAttribute("href")`)
	if !regexp.MustCompile(`^pprof/\d+ms-\d+ms/flamegraph$`).MatchString(href) {
		t.Fatalf("the time view put in place, a range selected: flame graph link %q", href)
	}
	waitJS(t, ctx, `(`+frame+`.document.documentElement.dataset.culpritShown || "").endsWith("/`+strings.TrimSuffix(href, "/flamegraph")+`/flamegraph.json")`)

	// From pprof's page, the time view link atop it.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"pprof/all/top"), chromedp.WaitVisible(chromedp.CSS(`#culprit-nav a[href$="time"]`))); err != nil {
		t.Fatalf("top: %v", err)
	}
	eval[bool](t, ctx, `(() => { window.culpritMark = "top"; return true; })()`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#culprit-nav a[href$="time"]`))); err != nil {
		t.Fatalf("top: clicking the time view: %v", err)
	}
	waitJS(t, ctx, drawn)
	if got := eval[[]string](t, ctx, `[String(window.culpritMark), Array.from(document.querySelectorAll("#maps h2")).map(e => e.textContent).join("\n")]`); got[0] != "top" || got[1] != maps {
		t.Errorf("the time view from top: page marked %q, maps %q; want it put in place of top, maps %q", got[0], got[1], maps)
	}
	waitJS(t, ctx, frameDrawn)
}

// topRows is the rows of pprof's top table shown.
const topRows = `Array.from(document.querySelectorAll("#toptable tbody tr")).map(tr => tr.textContent).join("\n")`

// menuClick opens pprof's menu menu and clicks its item item, as a user
// does (the mouse pressed on the menu's name, then moved to the item and
// clicked).
func menuClick(t *testing.T, ctx context.Context, menu, item string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(menu+" .menu-name")),
		chromedp.WaitVisible(chromedp.CSS(item)),
		chromedp.Click(chromedp.CSS(item)),
	); err != nil {
		t.Fatalf("menu %s, item %s: %v", menu, item, err)
	}
}

// pagesInPlace checks, on pprof's UI at ui (its root), that a filter
// chosen on the top page (fn's row selected, Refine, Hide) and another
// view chosen from the View menu (the flame graph, the call graph) are
// put in place of the page shown, in the same document, as the pages of
// the same URLs loaded afresh draw them; and that back shows the pages
// before, in the same document.
func pagesInPlace(t *testing.T, ctx context.Context, ui, fn string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(ui+"top"), chromedp.WaitVisible(chromedp.CSS(`#toptable tbody tr`))); err != nil {
		t.Fatalf("top: %v", err)
	}
	wholeRows := eval[string](t, ctx, topRows)
	at := eval[[]float64](t, ctx, `(() => {
		window.culpritMark = "top";
		const td = Array.from(document.querySelectorAll("#toptable tbody td")).find(e => e.textContent === `+strconv.Quote(fn)+`);
		if (!td) return [];
		td.scrollIntoView({block: "center"});
		const r = td.getBoundingClientRect();
		return [r.left + r.width / 2, r.top + r.height / 2];
	})()`)
	if len(at) != 2 {
		t.Fatalf("top: no row of %s:\n%s", fn, wholeRows)
	}
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(at[0], at[1])); err != nil {
		t.Fatalf("top: selecting %s: %v", fn, err)
	}
	menuClick(t, ctx, "#refine", "#hide")
	waitJS(t, ctx, `new URL(location.href).searchParams.has("h") && (document.documentElement.dataset.culpritSwapped || "").includes("/top?") && !!document.querySelector("#toptable tbody tr")`)
	hidden := eval[[]string](t, ctx, `[String(window.culpritMark), location.href, `+topRows+`]`)
	if hidden[0] != "top" {
		t.Errorf("hiding %s on top loaded a new page (%s), want it put in place", fn, hidden[1])
	}
	if strings.Contains(hidden[2], fn) || hidden[2] == "" || !strings.Contains(hidden[2], "spin_") {
		t.Errorf("top with %s hidden (%s) shows\n%s", fn, hidden[1], hidden[2])
	}

	// The flame graph of the same query, from the View menu.
	menuClick(t, ctx, "#view", "#flamegraph")
	waitJS(t, ctx, `(document.documentElement.dataset.culpritSwapped || "").includes("/flamegraph?") && !!document.querySelector("#stack-chart .boxtext")`)
	flame := eval[[]string](t, ctx, `[String(window.culpritMark), location.href, `+flameDrawn+`]`)
	if flame[0] != "top" || !strings.Contains(flame[1], "/flamegraph?") {
		t.Errorf("the flame graph chosen on top: %s, page marked %q, want it put in place", flame[1], flame[0])
	}
	if strings.Contains(flame[2], fn) || !strings.Contains(flame[2], "spin_") {
		t.Errorf("flame graph with %s hidden, put in place, draws\n%s", fn, flame[2])
	}
	// pprof's script works on the page put in place: the frame under the
	// mouse is named.
	box := eval[[]float64](t, ctx, `(() => {
		const box = Array.from(document.querySelectorAll("#stack-chart .boxbg")).find(e => e.textContent.startsWith("spin_"));
		if (!box) return [];
		const r = box.getBoundingClientRect();
		return [r.left + r.width / 2, r.top + r.height / 2, 0];
	})()`)
	if len(box) != 3 {
		t.Fatalf("flame graph put in place: no box of a spinning function")
	}
	if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, box[0], box[1])); err != nil {
		t.Fatalf("flame graph put in place: moving the mouse: %v", err)
	}
	waitJS(t, ctx, `document.getElementById("current-details-left").textContent.startsWith("spin_")`)

	// The call graph, from the View menu of the flame graph put in place.
	menuClick(t, ctx, "#view", "#graphbtn")
	waitJS(t, ctx, `(document.documentElement.dataset.culpritSwapped || "").includes("/graph?") && !!document.querySelector("#graph svg")`)
	graph := eval[[]string](t, ctx, `[String(window.culpritMark), location.href, document.querySelector("#graph svg").textContent]`)
	if graph[0] != "top" || strings.Contains(graph[2], fn) || !strings.Contains(graph[2], "spin_") {
		t.Errorf("call graph with %s hidden, put in place (page marked %q, %s), shows\n%.2000s", fn, graph[0], graph[1], graph[2])
	}

	// Back, twice: the flame graph, then top with fn hidden, in the same
	// document.
	eval[bool](t, ctx, `(() => { history.back(); return true; })()`)
	waitJS(t, ctx, `location.href === `+strconv.Quote(flame[1])+` && (document.documentElement.dataset.culpritSwapped || "") === location.href && !!document.querySelector("#stack-chart .boxtext")`)
	eval[bool](t, ctx, `(() => { history.back(); return true; })()`)
	waitJS(t, ctx, `location.href === `+strconv.Quote(hidden[1])+` && (document.documentElement.dataset.culpritSwapped || "") === location.href && !!document.querySelector("#toptable tbody tr")`)
	if back := eval[[]string](t, ctx, `[String(window.culpritMark), `+topRows+`]`); back[0] != "top" || back[1] != hidden[2] {
		t.Errorf("back to top with %s hidden: page marked %q, rows\n%s\nwant\n%s", fn, back[0], back[1], hidden[2])
	}

	// The source of the functions searched for, from the View menu: a
	// page whose head has a script of its own.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#search`), "spin_")); err != nil {
		t.Fatalf("top: searching: %v", err)
	}
	menuClick(t, ctx, "#view", "#list")
	waitJS(t, ctx, `(document.documentElement.dataset.culpritSwapped || "").includes("/source?") && !!document.querySelector("#content h2")`)
	const sourceShown = `Array.from(document.querySelectorAll("#content h2, #content pre")).map(e => e.textContent).join("\n")`
	source := eval[[]string](t, ctx, `[String(window.culpritMark), location.href, `+sourceShown+`, String(typeof pprof_toggle_asm)]`)
	if source[0] != "top" || !strings.Contains(source[2], "spin_a") || source[3] != "function" {
		t.Errorf("source of spin_ put in place (page marked %q, %s, its script %s) shows\n%.2000s", source[0], source[1], source[3], source[2])
	}

	// What was put in place is what the pages loaded afresh show.
	for _, c := range []struct{ url, ready, shown, want string }{
		{hidden[1], `#toptable tbody tr`, topRows, hidden[2]},
		{flame[1], `#stack-chart .boxtext`, flameDrawn, flame[2]},
		{graph[1], `#graph svg`, `document.querySelector("#graph svg").textContent`, graph[2]},
		{source[1], `#content h2`, sourceShown, source[2]},
	} {
		if err := chromedp.Do(ctx, chromedp.Navigate(c.url), chromedp.WaitVisible(chromedp.CSS(c.ready))); err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		if got := eval[string](t, ctx, c.shown); got != c.want {
			t.Errorf("%s: put in place\n%.2000s\nloaded afresh\n%.2000s", c.url, c.want, got)
		}
	}
}

// frameLegend is the lines of the legend of the flame graph in the time
// view's frame (w).
const frameLegend = `Array.from(w.document.querySelectorAll("#detailsbox div")).map(e => e.textContent).join("\n")`

// frameDrawn is the boxes of the flame graph in the time view's frame
// (w), as flameDrawn.
const frameDrawn = `Array.from(w.document.querySelectorAll("#stack-chart .boxbg")).map(e => [e.style.left, e.style.top, e.style.width, e.textContent].join(" ")).join("\n")`

// flameDrawn is the boxes of the flame graph shown: place, size and text.
const flameDrawn = `Array.from(document.querySelectorAll("#stack-chart .boxbg")).map(e => [e.style.left, e.style.top, e.style.width, e.textContent].join(" ")).join("\n")`

// flameFilterInPlace checks, on pprof's flame graph at u, that hiding fn
// from pprof's action menu (a box of fn right-clicked) draws the graph
// without fn in the same page, as the page of that query loaded afresh
// draws it; and that going back draws fn again, in the same page.
func flameFilterInPlace(t *testing.T, ctx context.Context, u, fn string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxtext`))); err != nil {
		t.Fatalf("flame graph %s: %v", u, err)
	}
	whole := eval[string](t, ctx, flameDrawn)
	// Drawn: its chart is colored, and the frame under the mouse is
	// named in the details.
	shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`#stack-chart`)))
	if err != nil {
		t.Fatalf("flame graph screenshot: %v", err)
	}
	if colored := coloredShare(t, shot); colored < 0.05 {
		t.Errorf("flame graph screenshot: %.3f of its pixels colored, want its boxes", colored)
	}
	at := eval[[]float64](t, ctx, `(() => {
		const box = Array.from(document.querySelectorAll("#stack-chart .boxbg")).find(e => e.textContent === `+strconv.Quote(fn)+`);
		if (!box) return [];
		const r = box.getBoundingClientRect();
		return [r.left + r.width / 2, r.top + r.height / 2];
	})()`)
	if len(at) != 2 {
		t.Fatalf("flame graph %s: no box %s:\n%s", u, fn, whole)
	}
	if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at[0], at[1])); err != nil {
		t.Fatalf("flame graph %s: moving the mouse over %s: %v", u, fn, err)
	}
	waitJS(t, ctx, `document.getElementById("current-details-left").textContent === `+strconv.Quote(fn))
	opened := eval[bool](t, ctx, `(() => {
		window.culpritMark = "page";
		const box = Array.from(document.querySelectorAll("#stack-chart .boxbg")).find(e => e.textContent === `+strconv.Quote(fn)+`);
		if (!box) return false;
		const r = box.getBoundingClientRect();
		box.dispatchEvent(new MouseEvent("contextmenu", {bubbles: true, cancelable: true, clientX: r.left + 2, clientY: r.top + 2}));
		return getComputedStyle(document.getElementById("action-menu")).display === "block";
	})()`)
	if !opened {
		t.Fatalf("flame graph %s: no box %s to right-click, or no action menu:\n%s", u, fn, whole)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#action-hide`))); err != nil {
		t.Fatalf("flame graph %s: hiding %s: %v", u, fn, err)
	}
	waitJS(t, ctx, `new URL(location.href).searchParams.has("h") && (document.documentElement.dataset.culpritShown || "").includes("flamegraph.json?")`)
	state := eval[[]string](t, ctx, `[String(window.culpritMark), location.href, `+flameDrawn+`]`)
	if state[0] != "page" {
		t.Errorf("hiding %s loaded a new page (%s), want it drawn in place", fn, state[1])
	}
	if last := eval[[]float64](t, ctx, `[culpritFlame.last.input, culpritFlame.last.ms]`); !(last[0] >= last[1]-1 && last[1] > 0) {
		t.Errorf("hiding %s: %v ms from the click to the frame drawn, %v ms from the request: want the first at least the second, over 0", fn, last[0], last[1])
	}
	if strings.Contains(state[2], fn) || state[2] == "" {
		t.Errorf("hiding %s: drawn\n%s", fn, state[2])
	}
	eval[bool](t, ctx, `(() => { history.back(); return true; })()`)
	waitJS(t, ctx, `!new URL(location.href).searchParams.has("h") && (document.documentElement.dataset.culpritShown || "").endsWith("/flamegraph.json") && `+flameDrawn+` !== ""`)
	if back := eval[[]string](t, ctx, `[String(window.culpritMark), `+flameDrawn+`]`); back[0] != "page" || back[1] != whole {
		t.Errorf("back from hiding %s: page marked %q, drawn\n%s\nwant\n%s", fn, back[0], back[1], whole)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(state[1]), chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxtext`))); err != nil {
		t.Fatalf("flame graph %s: %v", state[1], err)
	}
	if loaded := eval[string](t, ctx, flameDrawn); loaded != state[2] {
		t.Errorf("%s hidden: drawn in place\n%s\nloaded afresh\n%s", fn, state[2], loaded)
	}
}

// selectHalf selects, in the time view open in ctx, the range from the
// first cell with samples of the all-threads map to its middle one.
func selectHalf(t *testing.T, ctx context.Context) {
	t.Helper()
	// The cells with samples of the all-threads map, by index.
	const full = `data.threads[0].cells.flat().map((v, k) => v > 0 ? k : -1).filter(k => k >= 0)`
	first := eval[[]float64](t, ctx, `cellCenter(0, (`+full+`)[0])`)
	mid := eval[[]float64](t, ctx, `(() => { const f = `+full+`; return cellCenter(0, f[Math.floor(f.length/2)]); })()`)
	if err := chromedp.Do(ctx,
		chromedp.MouseClickXY(first[0], first[1]),
		chromedp.MouseClickXY(mid[0], mid[1]),
		chromedp.WaitVisible(chromedp.CSS(`#maps svg.heat path.selected`)),
	); err != nil {
		t.Fatalf("selecting a range: %v", err)
	}
}

// coloredShare is the share of a PNG's pixels that are not white or grey.
func coloredShare(t *testing.T, b []byte) float64 {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	bounds := img.Bounds()
	n := 0
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if max(r, g, b)-min(r, g, b) > 0x1000 {
				n++
			}
		}
	}
	return float64(n) / float64(bounds.Dx()*bounds.Dy())
}

// pprofTotals reads pprof's header of a view: the total (of the base
// when there is one) and what the shown nodes account for, in ms. Every
// node is shown (pprof's nf=0, trim=false): a difference may have nodes
// smaller than pprof's default cut; and in ms (unit=ms), to two decimals,
// whatever the size.
func pprofTotals(t *testing.T, u string) (total, shown float64) {
	t.Helper()
	u += "?nf=0&trim=false&unit=ms"
	code, body := get(t, u)
	if code != 200 {
		t.Fatalf("GET %s: %d\n%s", u, code, body)
	}
	ms := func(re *regexp.Regexp) float64 {
		m := re.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("GET %s: no %s in pprof's header", u, re)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		switch m[2] {
		case "s":
			v *= 1000
		case "us", "µs":
			v /= 1000
		}
		return v
	}
	return ms(totalRE), ms(regexp.MustCompile(`accounting for (-?[0-9.]+)(ms|s|us|µs)?,`))
}

// With --base, pprof's views show the profile minus the base's: a
// recording against itself shows nothing, against a shorter run the
// difference of their totals.
func TestViewCompare(t *testing.T) {
	long := recordThreads(t)
	bin := testutil.C(t, "threads", []string{"threads.c"}, "-O2", "-g", "-pthread")
	short := rec(t)
	mustRun(t, "record", "-o", short, "--", bin, "50000000")

	longURL, _ := startView(t, long)
	shortURL, _ := startView(t, short)
	longTotal, _ := pprofTotals(t, longURL+"pprof/all/top")
	shortTotal, _ := pprofTotals(t, shortURL+"pprof/all/top")
	if shortTotal >= longTotal {
		t.Fatalf("the run of 50M iterations has %.2fms, the run of 500M %.2fms: want fewer", shortTotal, longTotal)
	}

	same, _ := startView(t, "--base", long, long)
	// pprof's total of a difference (the base's) comes out up to a few
	// tenths of a percent from the base's own view's (its periods are
	// summed another way): allow 0.5%.
	near := func(a, b float64) bool { return math.Abs(a-b) <= 0.005*math.Abs(b)+0.02 }
	if total, shown := pprofTotals(t, same+"pprof/all/top"); !near(total, longTotal) || shown != 0 {
		t.Errorf("a recording against itself: total %.2fms, shown %.2fms; want %.2fms and 0", total, shown, longTotal)
	}
	diff, _ := startView(t, "--base", short, long)
	total, shown := pprofTotals(t, diff+"pprof/all/top")
	if !near(total, shortTotal) || !near(shown, longTotal-shortTotal) {
		t.Errorf("long against short: total %.2fms, shown %.2fms; want the base's %.2fms and %.2fms - %.2fms",
			total, shown, shortTotal, longTotal, shortTotal)
	}
	if code, body := get(t, diff); code != 200 || !strings.Contains(body, "difference from the base") {
		t.Errorf("index with --base (%d) does not say its views show a difference:\n%s", code, body)
	}
	// A time range of the profile is compared with the whole base.
	_, part := pprofTotals(t, diff+"pprof/0ms-100ms/top")
	if part >= shown {
		t.Errorf("the first 100ms against the base: %.2fms, want less than the whole recording's %.2fms", part, shown)
	}
}

// openPage opens the index at base, follows its link to page and returns
// the text of the page's section id.
func openPage(t *testing.T, ctx context.Context, base, page, id string) string {
	t.Helper()
	sel := `#pages a[href="` + page + `"]`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Click(chromedp.CSS(sel)),
		chromedp.WaitVisible(chromedp.CSS(`#`+id+` pre`)),
	); err != nil {
		t.Fatalf("page %s from the index: %v", page, err)
	}
	return eval[string](t, ctx, `document.querySelector("#`+id+` pre").textContent`)
}

// The analyses' pages, reached from the index, show what their commands
// print: latency and contexts of runs recorded with kernel events,
// diagnose of normal and buggy runs with sampled values, traced calls.
func TestViewAnalysesBrowser(t *testing.T) {
	testutil.NeedTool(t, "chromium")
	testutil.NeedRoot(t)
	threads := testutil.C(t, "threads", []string{"threads.c"}, "-O2", "-g", "-pthread")
	slow, fast := rec(t), rec(t)
	mustRun(t, "record", "--events", "cpu,syscalls,sched", "-o", slow, "--", threads, "100000000")
	mustRun(t, "record", "--events", "cpu,syscalls,sched", "-o", fast, "--", threads, "30000000")
	c := vprofCases[0]
	bin := c.bin(t)
	normal, buggy := rec(t), rec(t)
	mustRun(t, append([]string{"record", "--values", "-o", normal, "--", bin}, c.normal...)...)
	mustRun(t, append([]string{"record", "--values", "-o", buggy, "--", bin}, c.buggy...)...)
	trace1, trace2 := rec(t), rec(t)
	mustRun(t, "trace", "-f", "spin_*", "-o", trace1, "--", threads, "20000000")
	mustRun(t, "trace", "-f", "spin_*", "-o", trace2, "--", threads, "10000000")
	// The browser's deadline (a guard against a hang) counts from here:
	// the six recordings above can take minutes on a busy machine.
	ctx := chrome(t)

	same := func(page, got, want string) {
		t.Helper()
		if strings.TrimSpace(got) != strings.TrimSpace(want) {
			t.Errorf("%s page shows\n%s\nwant what the command prints:\n%s", page, got, want)
		}
	}

	var href string
	kernel, _ := startView(t, "--base", fast, slow)
	got := openPage(t, ctx, kernel, "latency", "latency")
	same("latency", got, mustRun(t, "latency", slow))
	got = openPage(t, ctx, kernel, "contexts", "paths")
	same("contexts", got, mustRun(t, "contexts", "--base", fast, "--buggy", slow))
	// The heat map is render's: ranked rows, the candidate outlined.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(kernel+"contexts/heatmap"),
		chromedp.WaitVisible(chromedp.CSS(`td.cand`)),
	); err != nil {
		t.Fatalf("contexts heat map: %v", err)
	}
	shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`table`)))
	if err != nil {
		t.Fatalf("contexts heat map screenshot: %v", err)
	}
	if colored := coloredShare(t, shot); colored < 0.01 {
		t.Errorf("contexts heat map: %.3f of its pixels colored, want a visible heat map", colored)
	}
	fnLinked(t, ctx, "contexts heat map", "td a.fn")
	// The calling-context tree, laid out by graphviz: the nodes culprit
	// contexts --format dot draws, those on ranked paths filled.
	testutil.NeedTool(t, "dot")
	if err := chromedp.Do(ctx,
		chromedp.Navigate(kernel+"contexts"),
		chromedp.WaitVisible(chromedp.CSS(`#cct iframe`)),
		chromedp.Navigate(kernel+"contexts/cct"),
		chromedp.WaitReady(chromedp.CSS(`g.node`)),
	); err != nil {
		t.Fatalf("contexts CCT: %v", err)
	}
	nodes := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("g.node > title")).map(e => e.textContent)`)
	filled := eval[int](t, ctx, `document.querySelectorAll('g.node polygon[fill="#ffe0d0"], g.node polygon[fill="#ff9f80"]').length`)
	dot := mustRun(t, "contexts", "--base", fast, "--buggy", slow, "--format", "dot")
	want := regexp.MustCompile(`(?m)^\s*(n\d+) \[label=`).FindAllStringSubmatch(dot, -1)
	wantSet := map[string]bool{}
	for _, m := range want {
		wantSet[m[1]] = true
	}
	gotSet := map[string]bool{}
	for _, n := range nodes {
		gotSet[n] = true
	}
	if len(wantSet) < 2 || len(gotSet) != len(wantSet) || filled == 0 {
		t.Errorf("contexts CCT: %d nodes (%d filled), want the %d of culprit contexts --format dot, the ranked paths' filled", len(gotSet), filled, len(wantSet))
	}
	for n := range wantSet {
		if !gotSet[n] {
			t.Errorf("contexts CCT: no node %s of culprit contexts --format dot", n)
		}
	}
	fnLinked(t, ctx, "contexts CCT", "g.node text a.fn")
	// The time view marks their system calls and context switches.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(kernel+"time"),
		chromedp.WaitVisible(chromedp.CSS(`#lanes svg.lane.events rect.event`)),
	); err != nil {
		t.Fatalf("time view's event lanes: %v", err)
	}
	lanes := eval[string](t, ctx, `Array.from(document.querySelectorAll("#lanes h2")).map(e => e.textContent).join("\n")`)
	for _, name := range []string{"system calls: ", "context switches: "} {
		if !strings.Contains(lanes, name) {
			t.Errorf("time view: no lane %q among\n%s", name, lanes)
		}
	}
	// A range selected there re-targets the latency page: it shows what
	// culprit latency prints of that window.
	selectHalf(t, ctx)
	href = eval[string](t, ctx, `document.querySelector('#links a[data-page="latency"]').getAttribute("href")`)
	m := regexp.MustCompile(`^latency\?from=(\d+ms)&to=(\d+ms)$`).FindStringSubmatch(href)
	if m == nil {
		t.Fatalf("time view: latency link %q after selecting a range, want latency?from=Ams&to=Bms", href)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#links a[data-page="latency"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#latency pre`)),
	); err != nil {
		t.Fatalf("latency page of a range: %v", err)
	}
	got = eval[string](t, ctx, `document.querySelector("#latency pre").textContent`)
	same("latency of a range", got, mustRun(t, "latency", "--from", m[1], "--to", m[2], slow))
	from, _ := time.ParseDuration(m[1])
	to, _ := time.ParseDuration(m[2])
	if rng := eval[string](t, ctx, `document.getElementById("range").textContent`); !strings.Contains(rng, "From "+from.String()+" to "+to.String()) {
		t.Errorf("latency page of a range says %q, want its range, %s to %s", rng, from, to)
	}
	// These runs have no sampled values: the index says what diagnose needs.
	if _, body := get(t, kernel); !strings.Contains(body, "culprit record --values") {
		t.Errorf("index of runs without values does not say what diagnose needs:\n%s", body)
	}

	// Each page put in place of another: from the index, culprit's links
	// atop each page, pprof's off-CPU flame graph (its page a redirect
	// leads to), a function's name.
	lat, paths, boxes := has(`#latency pre`), has(`#paths pre`), has(`#stack-chart .boxtext`)
	stepsInPlace(t, ctx, kernel,
		inPlaceStep{"", has(`#pages a[href="latency"]`), clickJS(`#pages a[href="latency"]`), lat},
		inPlaceStep{"latency", lat, clickJS(`#nav a[href="contexts"]`), paths},
		inPlaceStep{"contexts", paths, clickJS(`#nav a[href="offcpu"]`), boxes},
		// A function's name in the contexts page's frames (the heat map,
		// HTML; the tree, SVG), which opens in the top page.
		inPlaceStep{"contexts", inFrame(`#heatmap iframe`, `!!d.querySelector("a.fn")`), inFrame(`#heatmap iframe`, clickFn), has(`#share`)},
		inPlaceStep{"contexts", inFrame(`#cct iframe`, `!!d.querySelector("a.fn")`), inFrame(`#cct iframe`, clickFn), has(`#share`)},
		inPlaceStep{"offcpu/all/flamegraph", boxes, clickJS(`#culprit-nav a[href$="/latency"]`), lat},
		inPlaceStep{"latency", lat, clickJS(`#latency a.fn`), has(`#share`)},
	)

	values, _ := startView(t, "--base", normal, buggy)
	got = openPage(t, ctx, values, "diagnose", "diagnosis")
	same("diagnose", got, mustRun(t, "diagnose", "--normal", normal, "--buggy", buggy))
	if !strings.Contains(got, c.root) || !strings.Contains(got, c.pattern) {
		t.Errorf("diagnose page names no %s with %s:\n%s", c.root, c.pattern, got)
	}
	// The root cause's name links to its function page, which links to
	// pprof's callers and callees of it.
	href = eval[string](t, ctx, `(() => { const a = Array.from(document.querySelectorAll("#diagnosis a.fn")).find(a => a.textContent === `+strconv.Quote(c.root)+`); return a ? a.getAttribute("href") : ""; })()`)
	if href == "" {
		t.Errorf("diagnose page: %s is not a link", c.root)
	} else {
		code, body := get(t, values+href)
		peek := regexp.MustCompile(`href="(pprof/all/peek\?f=[^"]*)"`).FindStringSubmatch(body)
		if code != 200 || !strings.Contains(body, "<code>"+c.root+"</code>") || peek == nil {
			t.Fatalf("diagnose page's link %s: %d, want the function page of %s:\n%.600s", href, code, c.root, body)
		}
		if code, body := get(t, values+html.UnescapeString(peek[1])); code != 200 || !strings.Contains(body, c.root) || strings.Contains(body, "no matches") {
			t.Errorf("function page's link %s: %d, want pprof's peek of %s:\n%.300s", peek[1], code, c.root, body)
		}
	}
	// The root cause's variable, drawn for both kinds of run.
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#hist-0 svg.hist`))); err != nil {
		t.Fatalf("diagnose page: no histogram: %v", err)
	}
	// [title, normal bars, buggy bars] of the histogram of the root cause.
	hist := eval[[]any](t, ctx, `(() => {
		const s = Array.from(document.querySelectorAll("section[id^=hist-]")).find(s => s.querySelector("h2").textContent.startsWith(`+strconv.Quote(c.root+": ")+`));
		return s ? [s.querySelector("h2").textContent, s.querySelectorAll("rect.bar.run0").length, s.querySelectorAll("rect.bar.run1").length] : [];
	})()`)
	if len(hist) != 3 || hist[1].(float64) == 0 || hist[2].(float64) == 0 {
		t.Errorf("diagnose page: histogram of %s's variable %v, want bars of both runs", c.root, hist)
	}
	fnLinked(t, ctx, "diagnose histograms", "section[id^=hist-] h2 a.fn")
	// The time view draws a lane per sampled variable.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(values+"time"),
		chromedp.WaitVisible(chromedp.CSS(`#lanes svg.lane.values polyline`)),
	); err != nil {
		t.Fatalf("time view's value lanes: %v", err)
	}
	points := eval[int](t, ctx, `Math.max(...Array.from(document.querySelectorAll("#lanes svg.lane.values polyline")).map(p => p.points.numberOfItems))`)
	if points < 10 {
		t.Errorf("time view: the longest series of sampled values has %d points, want the run's", points)
	}

	diag := has(`#diagnosis pre`)
	stepsInPlace(t, ctx, values,
		inPlaceStep{"", has(`#pages a[href="diagnose"]`), clickJS(`#pages a[href="diagnose"]`), diag},
		inPlaceStep{"diagnose", diag, clickJS(`#diagnosis a.fn`), has(`#share`)},
	)

	traced, _ := startView(t, "--base", trace2, trace1)
	got = openPage(t, ctx, traced, "trace", "functions")
	same("trace", got, mustRun(t, "report", "--top", "0", trace1))
	diff := eval[string](t, ctx, `document.querySelector("#diff pre").textContent`)
	same("trace against the base", diff, mustRun(t, "diff", "--top", "0", trace2, trace1))
	stepsInPlace(t, ctx, traced, inPlaceStep{"", has(`#pages a[href="trace"]`), clickJS(`#pages a[href="trace"]`), has(`#functions pre`)})
	for _, fn := range []string{"spin_a", "spin_b", "spin_c"} {
		if !strings.Contains(got, fn) {
			t.Errorf("trace page names no %s:\n%s", fn, got)
		}
	}
}

// The off-CPU flame graph charges the stacks threads left the CPU with
// with the time they stayed off: introperf_blocking's flusher alone sleeps
// 400 times at least 0.5 ms, and no thread can be off longer than the run.
func TestViewOffCPU(t *testing.T) {
	ctx := chrome(t)
	testutil.NeedRoot(t)
	bin := testutil.C(t, "introperf_blocking", []string{"introperf_blocking.c"}, append(ipFlags, "-pthread")...)
	r := rec(t)
	start := time.Now()
	// Every switch recorded: in system call windows (auto starts them
	// when the program's calls come faster than its rate, as this
	// program's do in some runs) a switch stands for its window's scale
	// of them, which the flame graph charges and the time view, drawing
	// each span once, does not; the totals compared below are then
	// different measures.
	mustRun(t, "record", "--events", "cpu,syscalls,sched", "--syscall-windows", "off", "-o", r, "--", bin, "100", "200")
	wall := time.Since(start)
	base, _ := startView(t, r)

	sel := `#pages a[href="offcpu"]`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(sel)),
	); err != nil {
		t.Fatalf("index: %v", err)
	}
	// The link's own click: the page it opens answers with a redirect,
	// and a mouse event whose click navigates through one can wait for
	// its answer for good.
	eval[bool](t, ctx, `(document.querySelector('`+sel+`').click(), true)`)
	waitJS(t, ctx, `document.querySelectorAll("#stack-chart .boxtext").length > 0`)
	boxes := eval[string](t, ctx, `Array.from(document.querySelectorAll("#stack-chart .boxtext")).map(e => e.textContent).join("\n")`)
	body := eval[string](t, ctx, `document.body.textContent`)
	if !strings.Contains(body, "Type: off-cpu") {
		t.Errorf("off-CPU flame graph: no \"Type: off-cpu\" in its details")
	}
	if !strings.Contains(boxes, "schedule") {
		t.Errorf("off-CPU flame graph: no box of the scheduler's; boxes:\n%s", boxes)
	}
	// 5 threads: main, the flusher and 3 workers.
	total, _ := pprofTotals(t, base+"offcpu/all/top")
	if total < 200 || total > 5*float64(wall.Milliseconds()) {
		t.Errorf("off-CPU total %.2fms, want at least the flusher's 400 sleeps of 0.5ms and at most 5 threads × the run's %v", total, wall)
	}
	// A time range's off-CPU view holds the spans that began in it.
	part, _ := pprofTotals(t, base+"offcpu/0ms-100ms/top")
	if part <= 0 || part >= total {
		t.Errorf("off-CPU total of the first 100ms %.2fms, want some of the whole run's %.2fms", part, total)
	}
	// The time view's range links open it too, through the page's
	// from and to parameters.
	if _, body := get(t, base+"time"); !strings.Contains(body, `data-page="offcpu"`) {
		t.Errorf("the time view links no off-CPU flame graph")
	}
	if part2, _ := pprofTotals(t, base+"offcpu/0s-100ms/top"); part2 != part {
		t.Errorf("off-CPU total of 0s-100ms %.2fms, of 0ms-100ms %.2fms: want the same", part2, part)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := noRedirect.Get(base + "offcpu?from=0ms&to=100ms"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); loc != "offcpu/0s-100ms/flamegraph" {
			t.Errorf("offcpu?from=0ms&to=100ms sends to %q, want offcpu/0s-100ms/flamegraph", loc)
		}
	}
	// The time view draws each thread's spans off the CPU: the same spans,
	// so the same total, and the blocking threads' among them.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"time"),
		chromedp.WaitVisible(chromedp.CSS(`#lanes svg.lane.thread rect.offcpu`)),
	); err != nil {
		t.Fatalf("time view's thread lanes: %v", err)
	}
	lanes := eval[[]float64](t, ctx, `(() => { const l = data.lanes.filter(l => l.kind === "thread");
		return [l.length, l.filter(l => (l.spans || []).length > 0).length, l.reduce((s, l) => s + (l.off_ms || 0), 0)]; })()`)
	if lanes[1] < 2 || math.Abs(lanes[2]-total) > 0.005*total+0.1 {
		t.Errorf("time view: %v thread lanes, %v with off-CPU spans, %.2fms off the CPU in all; want 2 threads at least and the off-CPU flame graph's %.2fms",
			lanes[0], lanes[1], lanes[2], total)
	}
	// With switches onto a CPU and wake-ups recorded, the spans are the
	// thread states' intervals: the same bounds hold.
	exact := rec(t)
	start = time.Now()
	mustRun(t, "record", "--events", "cpu,wakeup", "-o", exact, "--", bin, "100", "200")
	wall = time.Since(start)
	exactURL, _ := startView(t, exact)
	if total, _ := pprofTotals(t, exactURL+"offcpu/all/top"); total < 200 || total > 5*float64(wall.Milliseconds()) {
		t.Errorf("off-CPU total from thread states %.2fms, want at least 200ms and at most 5 threads × the run's %v", total, wall)
	}
	// A recording without context switches says what the page needs.
	plain := recordThreads(t)
	other, _ := startView(t, plain)
	if code, body := get(t, other+"offcpu"); code != http.StatusNotFound || !strings.Contains(body, "--events cpu,syscalls,sched") {
		t.Errorf("offcpu of a recording without switches: %d\n%s", code, body)
	}
}

// A recording of culprit variance has its variance tree page, which
// shows what culprit variance -i --tree prints.
func TestViewVariance(t *testing.T) {
	ctx := chrome(t)
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varpool", []string{"varpool.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	mustRun(t, "variance", "--start", "handle", "--round-intervals", "500", "-o", out, "--", bin, "dominant", "2000", "4")
	base, _ := startView(t, out)
	got := openPage(t, ctx, base, "variance", "variance")
	want := mustRun(t, "variance", "-i", out, "--tree")
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("variance page shows\n%s\nwant what culprit variance -i --tree prints:\n%s", got, want)
	}
	if !strings.Contains(got, "handle") {
		t.Errorf("variance page names no handle, the interval's function:\n%s", got)
	}
	stepsInPlace(t, ctx, base, inPlaceStep{"", has(`#pages a[href="variance"]`), clickJS(`#pages a[href="variance"]`), has(`#variance pre`)})

	// Recorded with --sched, the page has what the scheduler's events
	// give the report: the intervals' time by state, each factor's, the
	// wakers' nodes of the tree (the worker's dequeue that ended the
	// accepting thread's waits in enqueue).
	queue := testutil.C(t, "varqueue", []string{"varqueue.c"}, "-O2", "-g", "-pthread")
	sched := rec(t)
	mustRun(t, "variance", "--start", "accept_req", "--end", "serve", "--queue", "enqueue:dequeue", "--queue-key", "r:return",
		"--sched", "--rounds", "1", "-o", sched, "--", queue, "400", "4")
	base, _ = startView(t, sched)
	got = openPage(t, ctx, base, "variance", "variance")
	want = mustRun(t, "variance", "-i", sched, "--tree")
	if !strings.Contains(want, "time in an interval:") {
		t.Fatalf("culprit variance -i --tree of a --sched recording has no time by state:\n%s", want)
	}
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("variance page of a --sched recording shows\n%s\nwant what culprit variance -i --tree prints:\n%s", got, want)
	}
}

// pprof's source and disassembly pages are built from the profile with
// each stack's addresses once (a recursion's stacks at every depth become
// one), peek from the one with each stack's repeats cut: on a recorded
// recursion they are the pages the whole profile of addresses or lines
// gives, which a parameter they do not allow asks for, less a hide's own
// note that it matched nothing. (pprof orders the
// files of functions of equal time in map order: each query names one.)
func TestViewRecursionPages(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "deeprec", []string{"deeprec.c"}, "-O2", "-g")
	r := rec(t)
	mustRun(t, "record", "-o", r, "--", bin, "300000")
	base, _ := startView(t, r)
	errs := regexp.MustCompile(`<div id="errors">.*?</div></div>|<div id="errors"></div>`)
	for _, v := range []string{"source?f=descend", "disasm?f=descend", "source?f=round_", "source?f=%5Emain%24", "disasm?f=round_",
		"peek?f=descend", "peek?f=round_&h=%5Emain%24"} {
		// A hide matching nothing, or for peek (which reads hides) the
		// default node fraction: the whole profile of lines or addresses.
		whole := "&h=a%5E"
		if strings.HasPrefix(v, "peek") {
			whole = "&nf=0.005"
		}
		code, once := get(t, base+"pprof/all/"+v)
		code2, whole := get(t, base+"pprof/all/"+v+whole)
		if code != http.StatusOK || code2 != http.StatusOK {
			t.Errorf("%s: %d, and from the whole profile %d", v, code, code2)
			continue
		}
		if !strings.HasPrefix(v, "peek") && !strings.Contains(whole, "Hide expression matched no samples") {
			t.Errorf("%s with a hide matching nothing: pprof's note is not on the page", v)
		}
		once, whole = errs.ReplaceAllString(once, ""), errs.ReplaceAllString(whole, "")
		if once != whole {
			t.Errorf("%s: the page from stacks with each address once differs from the whole profile's:\n%s\nagainst\n%s", v, once, whole)
		}
		_, fn, _ := strings.Cut(v, "f=")
		fn, _, _ = strings.Cut(fn, "&")
		fn = strings.TrimSuffix(strings.TrimPrefix(fn, "%5E"), "%24")
		if !strings.Contains(once, fn) {
			t.Errorf("%s: the page does not name %s", v, fn)
		}
	}

	// The pages read the recorded program with culprit's own reader: the
	// source of descend, each line with its time and its instructions,
	// and its disassembly, each instruction with its time and line.
	_, src := get(t, base+"pprof/all/source?f=descend")
	text := html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(src, " "))
	lineRe := regexp.MustCompile(`(?m)^\s*(\d+)\s+(\S+)\s+(\S+)\s+(.*)$`)
	var timed, callLine bool
	for _, m := range lineRe.FindAllStringSubmatch(text, -1) {
		if m[3] != "." && strings.Contains(m[4], "descend(d - 1)") {
			callLine = true
		}
		if m[2] != "." && strings.Contains(m[4], "sink") {
			timed = true
		}
	}
	if !callLine || !timed || !strings.Contains(text, "deeprec.c") {
		t.Errorf("source of descend: the recursive call's line has no time (%v), no line touching sink has self time (%v), or deeprec.c is not named:\n%s", callLine, timed, text)
	}
	_, dis := get(t, base+"pprof/all/disasm?f=descend")
	text = html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(dis, " "))
	insRe := regexp.MustCompile(`(?m)^\s*(\S+)\s+(\S+)\s+[0-9a-f]+: (\S+)`)
	var ins, selfTimed int
	for _, m := range insRe.FindAllStringSubmatch(text, -1) {
		ins++
		if m[1] != "." {
			selfTimed++
		}
	}
	if !strings.Contains(text, "ROUTINE ======================== descend") || ins < 4 || selfTimed == 0 || !strings.Contains(text, "deeprec.c:") {
		t.Errorf("disassembly of descend: %d instructions, %d with self time:\n%s", ins, selfTimed, text)
	}
}

// pageShown is what the page shows: its title, and its text or, on a
// flame graph, its boxes (flameDrawn).
const pageShown = `document.title + "\n" + (document.querySelector("#stack-chart") ? ` + flameDrawn + ` : document.body.innerText)`

// inPlaceStep is a page, a way to leave it for another page (a link
// clicked, a form sent) and when each is drawn.
type inPlaceStep struct {
	from      string // the page, below the server's root
	fromReady string // JavaScript: it is drawn
	act       string // JavaScript: leads to another page
	ready     string // JavaScript: the other page is drawn
}

// A link clicked: the click of the element sel (its own, as a link whose
// page answers with a redirect is followed without waiting on it).
func clickJS(sel string) string {
	return `(document.querySelector(` + strconv.Quote(sel) + `).click(), true)`
}

// inFrame is JavaScript: the expression expr, of the document d of the
// frame sel once loaded (false before).
func inFrame(sel, expr string) string {
	return `(() => { const f = document.querySelector(` + strconv.Quote(sel) + `), d = f && f.contentDocument; return !!d && d.readyState === "complete" && d.URL !== "about:blank" && (` + expr + `); })()`
}

// clickFn, in a frame's document d, clicks its first function's link (a
// click event, as SVG's links have no click()).
const clickFn = `(d.querySelector("a.fn").dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, view: d.defaultView})), true)`

// has is JavaScript: an element sel is there.
func has(sel string) string { return `!!document.querySelector(` + strconv.Quote(sel) + `)` }

// stepsInPlace checks, for each step, that the page the step leads to
// from its page (below base) is put in place of it: the same document
// (a mark survives), the URL it ends at pushed, drawn as that URL loaded
// afresh; that back then puts the page before in place again, drawn as it
// was; and that forward then puts the page led to in place again, drawn
// as it was. It returns the URLs led to.
func stepsInPlace(t *testing.T, ctx context.Context, base string, steps ...inPlaceStep) []string {
	t.Helper()
	var out []string
	open := func(s inPlaceStep) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(base+s.from)); err != nil {
			t.Fatalf("%s: %v", s.from, err)
		}
		waitJS(t, ctx, `document.readyState === "complete" && `+s.fromReady)
		shown := eval[string](t, ctx, pageShown)
		eval[bool](t, ctx, `(() => { window.culpritMark = "before"; return true; })()`)
		eval[bool](t, ctx, s.act)
		// Put in place (the mark kept) or loaded, the page is drawn.
		waitJS(t, ctx, `(window.culpritMark !== "before" || !!document.documentElement.dataset.culpritSwapped) && `+s.ready)
		return shown
	}
	for _, s := range steps {
		before := open(s)
		got := eval[[]string](t, ctx, `[String(window.culpritMark), location.href, document.documentElement.dataset.culpritSwapped || "", `+pageShown+`]`)
		if got[0] != "before" || got[2] != got[1] {
			t.Fatalf("from %s (%s): %s loaded (marked %q, put in place %q), want it put in place", s.from, s.act, got[1], got[0], got[2])
		}
		// Once drawn, the page before is gone (its frames with it), and
		// the time from the click to the frame drawn is counted from the
		// input event, before the click's handlers ran.
		if left := eval[[]float64](t, ctx, `[document.querySelectorAll("body").length, document.querySelectorAll("iframe").length - document.body.querySelectorAll("iframe").length,
			window.culpritSwapped.input, window.culpritSwapped.ms]`); left[0] != 1 || left[1] != 0 || !(left[2] >= left[3]-1 && left[3] > 0) {
			t.Errorf("from %s to %s: %v bodies and %v frames outside the body left, input %v ms to the frame drawn, %v from the handler: want 1, 0, and input ≥ handler > 0 (within the clocks' 1 ms)",
				s.from, got[1], left[0], left[1], left[2], left[3])
		}
		out = append(out, got[1])
		if err := chromedp.Do(ctx, chromedp.Navigate(got[1])); err != nil {
			t.Fatalf("%s: %v", got[1], err)
		}
		waitJS(t, ctx, `document.readyState === "complete" && `+s.ready)
		if loaded := eval[string](t, ctx, pageShown); loaded != got[3] {
			t.Errorf("from %s, %s put in place shows\n%s\nloaded afresh\n%s", s.from, got[1], got[3], loaded)
		}
		// Back: the page before, put in place as it was.
		open(s)
		eval[bool](t, ctx, `(() => { history.back(); return true; })()`)
		waitJS(t, ctx, `location.href === `+strconv.Quote(base+s.from)+` && (window.culpritMark !== "before" || document.documentElement.dataset.culpritSwapped === location.href) && `+s.fromReady)
		back := eval[[]string](t, ctx, `[String(window.culpritMark), `+pageShown+`]`)
		if back[0] != "before" || back[1] != before {
			t.Errorf("back from %s to %s: marked %q, shows\n%s\nwant it put in place as it was\n%s", got[1], s.from, back[0], back[1], before)
		}
		// Forward: the page led to, put in place again as it was.
		eval[bool](t, ctx, `(() => { history.forward(); return true; })()`)
		waitJS(t, ctx, `location.href === `+strconv.Quote(got[1])+` && (window.culpritMark !== "before" || document.documentElement.dataset.culpritSwapped === location.href) && `+s.ready)
		fwd := eval[[]string](t, ctx, `[String(window.culpritMark), `+pageShown+`]`)
		if fwd[0] != "before" || fwd[1] != got[3] {
			t.Errorf("forward from %s to %s: marked %q, shows\n%s\nwant it put in place as it was\n%s", s.from, got[1], fwd[0], fwd[1], got[3])
		}
	}
	return out
}

// Diagnose with several recordings on each side: each is loaded once, on
// the first analysis, and kept for the next, so that a time range's
// analysis after the recordings were moved away answers as the whole
// recordings' did.
func TestViewDiagnoseSeveral(t *testing.T) {
	testutil.NeedRoot(t)
	c := vprofCases[0]
	bin := c.bin(t)
	var normal, buggy []string
	for range 2 {
		n, b := rec(t), rec(t)
		mustRun(t, append([]string{"record", "--values", "-o", n, "--", bin}, c.normal...)...)
		mustRun(t, append([]string{"record", "--values", "-o", b, "--", bin}, c.buggy...)...)
		normal, buggy = append(normal, n), append(buggy, b)
	}
	base, stderr := startView(t, append([]string{"--base", strings.Join(normal, ",")}, buggy...)...)
	// A page being built says so; asked again until it is there (go
	// test's timeout bounds a hang).
	built := func(page string) string {
		t.Helper()
		for {
			code, body := get(t, base+page)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d\n%.800s\nstderr:\n%s", page, code, body, stderr)
			}
			if !strings.Contains(body, `id="building"`) {
				return body
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if body := built("diagnose"); !strings.Contains(body, c.root) {
		t.Fatalf("diagnose of 2 normal and 2 buggy runs names no %s:\n%.2000s", c.root, body)
	}
	for _, p := range append(normal, buggy...) {
		if err := os.Rename(p, p+".moved"); err != nil {
			t.Fatal(err)
		}
	}
	if body := built("diagnose?from=0s&to=1h"); !strings.Contains(body, c.root) {
		t.Errorf("diagnose of a range, the recordings moved away, names no %s:\n%.2000s", c.root, body)
	}
}

// TestViewValueLaneBrowser records a program whose variable takes two
// known values (testdata/targets/valuelane.c: spin's level, 3 then 250,
// each for 2 s of CPU time) with its values at -F 4999, more values of it
// than the time view holds one by one (so they are summarised in buckets
// of time), and checks in headless Chromium that its lane is titled with
// every value, from 3 to 250, drawn with the band of its buckets' least
// and greatest, and that a range selected draws values within them.
func TestViewValueLaneBrowser(t *testing.T) {
	bin := testutil.C(t, "valuelane", []string{"valuelane.c"}, "-O0", "-g")
	r := rec(t)
	// 4999 Hz, not more: the recording must lose nothing (as every one of
	// the suite), and this test is about the view, not the recorder's limit.
	mustRun(t, "record", "--values", "-F", "4999", "-o", r, "--", bin, "2")
	u, _ := startView(t, r)
	ctx := chrome(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(u+"time")); err != nil {
		t.Fatal(err)
	}
	// The lane of spin's level, once its values are in.
	lane := `Array.from(document.querySelectorAll("#lanes .lane-box")).find(b => b.querySelector("h2").textContent.startsWith("spin: level: "))`
	waitJS(t, ctx, `(() => { const b = `+lane+`; return !!b && !!b.querySelector("svg.lane.values:not(.pending) polyline"); })()`)
	head := eval[string](t, ctx, lane+`.querySelector("h2").textContent`)
	m := regexp.MustCompile(`^spin: level: (\d+) values, (\S+) to (\S+)$`).FindStringSubmatch(head)
	if m == nil {
		t.Fatalf("the lane of spin's level is titled %q, want N values, MIN to MAX", head)
	}
	n, _ := strconv.Atoi(m[1])
	// The view holds 8192 values of a source one by one (view's
	// rawValues): 4 s of CPU time at -F 4999 give some 20,000.
	if n <= 8192 {
		t.Fatalf("the lane of spin's level has %d values, want more than 8192 (4 s of CPU at -F 4999) for its summary", n)
	}
	if m[2] != "3" || m[3] != "250" {
		t.Errorf("the lane of spin's level runs from %s to %s, want 3 to 250 (the values level takes)", m[2], m[3])
	}
	if !eval[bool](t, ctx, `!!`+lane+`.querySelector("svg.lane.values polygon.band")`) {
		t.Errorf("the lane of spin's level, summarised, draws no band of its buckets' least and greatest")
	}
	// A range: its lane's values within 3 to 250, fewer than the whole.
	selectHalf(t, ctx)
	waitJS(t, ctx, `document.getElementById("lanes").dataset.range !== "" && (() => { const b = `+lane+`; return !!b && !!b.querySelector("svg.lane.values:not(.pending) polyline") && !b.querySelector("h2").textContent.startsWith("spin: level: `+m[1]+` "); })()`)
	head = eval[string](t, ctx, lane+`.querySelector("h2").textContent`)
	rm := regexp.MustCompile(`^spin: level: (\d+) values, (\S+) to (\S+)$`).FindStringSubmatch(head)
	if rm == nil {
		t.Fatalf("the lane of spin's level, a range selected, is titled %q, want N values, MIN to MAX", head)
	}
	rn, _ := strconv.Atoi(rm[1])
	lo, _ := strconv.ParseFloat(rm[2], 64)
	hi, _ := strconv.ParseFloat(rm[3], 64)
	if rn == 0 || rn >= n || lo < 3 || hi > 250 || lo > hi {
		t.Errorf("the lane of spin's level in a range: %d values, %v to %v; want fewer than the whole's %d, within 3 to 250", rn, lo, hi, n)
	}
}
