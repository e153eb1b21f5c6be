package view

import (
	"io"
	"net/http"
	"net/http/httptest"
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
