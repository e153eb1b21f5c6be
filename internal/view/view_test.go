package view

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/analysis/introperf"
	"github.com/culprit-dev/culprit/internal/profile"
)

func TestParseRange(t *testing.T) {
	for _, c := range []struct {
		key      string
		from, to time.Duration
	}{
		{"", 0, 0},
		{"0ms-20ms", 0, 20 * time.Millisecond},
		{"1.5s-2s", 1500 * time.Millisecond, 2 * time.Second},
	} {
		from, to, err := parseRange(c.key)
		if err != nil || from != c.from || to != c.to {
			t.Errorf("parseRange(%q) = %v, %v, %v; want %v, %v", c.key, from, to, err, c.from, c.to)
		}
	}
	for _, key := range []string{"all", "2s-1s", "1s-1s", "-1s-2s", "1s", "1s-", "../etc", "1s-2s-3s", "1-2"} {
		if _, _, err := parseRange(key); err == nil {
			t.Errorf("parseRange(%q) accepted", key)
		}
	}
}

// TestPagesBuiltAhead checks that the server builds each page the index
// links to in the background, once, so that the first request of an
// analysis's page answers with the kept result instead of running it.
func TestPagesBuiltAhead(t *testing.T) {
	var calls atomic.Int32
	in := Inputs{Profile: &profile.Profile{}, Names: []string{"a.rec"},
		Latency: func(Range) (*introperf.Result, error) {
			calls.Add(1)
			return &introperf.Result{Tree: introperf.NewTree(introperf.NewFuncTable())}, nil
		}}
	s, err := New(in, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute) // a hang, not a timing
	for calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if calls.Load() != 1 {
		t.Fatalf("latency ran %d times before any request, want 1", calls.Load())
	}
	for range 2 {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, s.Path()+"latency", nil))
		if w.Code != http.StatusOK {
			t.Fatalf("GET latency: %d %s", w.Code, w.Body)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("latency ran %d times, want 1 (built ahead, then kept)", n)
	}
}

// TestPageBuilding checks that a request for a page whose analysis is
// still running is answered at once with a page that says so, and the
// page itself once the analysis is over.
func TestPageBuilding(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	in := Inputs{Profile: &profile.Profile{}, Names: []string{"a.rec"},
		Latency: func(Range) (*introperf.Result, error) {
			calls.Add(1)
			<-release
			return &introperf.Result{Tree: introperf.NewTree(introperf.NewFuncTable())}, nil
		}}
	s, err := New(in, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) *httptest.ResponseRecorder {
		t.Helper()
		got := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			w := httptest.NewRecorder()
			s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, s.Path()+path, nil))
			got <- w
		}()
		select {
		case w := <-got:
			return w
		case <-time.After(2 * time.Minute): // a hang, not a timing
			t.Fatalf("GET %s waited for the analysis to end", path)
			return nil
		}
	}
	for _, path := range []string{"latency", "latency?from=0s&to=1s"} {
		w := get(path)
		body := w.Body.String()
		if w.Code != http.StatusOK || !strings.Contains(body, `id="building"`) || !strings.Contains(body, "culpritSwap(href, false)") {
			t.Errorf("GET %s while its analysis runs: %d\n%s\nwant the page saying it is being built, asking again", path, w.Code, body)
		}
		if w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s while its analysis runs: Cache-Control %q, want no-store", path, w.Header().Get("Cache-Control"))
		}
	}
	close(release)
	for _, path := range []string{"latency", "latency?from=0s&to=1s"} {
		var body string
		deadline := time.Now().Add(2 * time.Minute) // a hang, not a timing
		for time.Now().Before(deadline) {
			if body = get(path).Body.String(); !strings.Contains(body, `id="building"`) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(body, `<section id="latency">`) {
			t.Errorf("GET %s after its analysis: want the page\n%s", path, body)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("latency ran %d times, want 2 (the whole recording and the range, each once)", n)
	}
}
