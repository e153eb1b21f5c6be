package view

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/analysis/vprof"
	"github.com/culprit-dev/culprit/internal/profile"
)

// heldWriter is a response whose first Write blocks until hold is closed:
// its request is being answered until then.
type heldWriter struct {
	h     http.Header
	wrote chan struct{} // closed at the first Write
	hold  chan struct{}
	once  sync.Once
}

func (w *heldWriter) Header() http.Header { return w.h }
func (w *heldWriter) WriteHeader(int)     {}
func (w *heldWriter) Write(b []byte) (int, error) {
	w.once.Do(func() { close(w.wrote) })
	<-w.hold
	return len(b), nil
}

// hang fails t when ch is not closed within a long guard: a hang, not a
// timing.
func hang(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(2 * time.Minute):
		t.Fatalf("hung: %s", what)
	}
}

// TestDiagnoseAheadPauses: diagnose's analysis, built ahead of use, is
// given the server's pause; a request served while it runs is answered
// without waiting for it; at its pause the analysis waits while a request
// is being answered and goes on once none is; its page then shows what it
// found.
func TestDiagnoseAheadPauses(t *testing.T) {
	entered := make(chan struct{})
	goOn := make(chan struct{})
	resumed := make(chan struct{})
	var calls int
	in := Inputs{Profile: &profile.Profile{}, Names: []string{"buggy.rec"}, Bases: []string{"normal.rec"},
		Diagnose: func(rng Range, pause func()) (*vprof.Result, error) {
			if calls++; calls > 1 {
				return nil, errors.New("analysis run again")
			}
			if pause == nil {
				return nil, errors.New("the build ahead of use was given no pause")
			}
			close(entered)
			<-goOn
			pause()
			close(resumed)
			return &vprof.Result{Notes: []string{"the analysis ran"}}, nil
		}}
	s, err := New(in, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	hang(t, entered, "the diagnose page's build ahead of use did not start")

	// A request being answered (its response held) …
	held := &heldWriter{h: http.Header{}, wrote: make(chan struct{}), hold: make(chan struct{})}
	heldDone := make(chan struct{})
	go func() {
		defer close(heldDone)
		s.ServeHTTP(held, httptest.NewRequest(http.MethodGet, s.Path(), nil))
	}()
	hang(t, held.wrote, "the index was not written")
	// … and another, answered while the analysis is midway.
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, s.Path(), nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("index while diagnose is built: %d", rec.Code)
	}
	select {
	case <-resumed:
		t.Fatal("the analysis went on before it was let")
	default:
	}

	// The analysis reaches its pause while the held request is answered:
	// it waits there.
	close(goOn)
	guard := time.After(2 * time.Minute) // a hang, not a timing
	for {
		s.answerMu.Lock()
		paused := s.pausing > 0
		s.answerMu.Unlock()
		if paused {
			break
		}
		select {
		case <-resumed:
			t.Fatal("the analysis went on past its pause while a request was being answered")
		case <-guard:
			t.Fatal("hung: the analysis neither paused nor went on")
		case <-time.After(time.Millisecond):
		}
	}
	close(held.hold)
	hang(t, heldDone, "the held request did not end")
	hang(t, resumed, "the analysis did not go on once no request was answered")

	// Its page shows its result (asked again while the build ends).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, s.Path()+"diagnose", nil))
		if strings.Contains(rec.Body.String(), "the analysis ran") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("diagnose page: %d %s", rec.Code, rec.Body.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAwaitingUncounted: a request that waits for a build is not counted
// as being answered meanwhile, so that a build ahead of use it waits for
// does not pause for it; once the wait is over it counts again.
func TestAwaitingUncounted(t *testing.T) {
	s, err := New(Inputs{Profile: &profile.Profile{}, Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	done := s.answer() // as ServeHTTP does
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r = r.WithContext(context.WithValue(r.Context(), answeringKey{}, true))
	waited, after := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(after)
		s.awaiting(r, func() {
			s.waitAnswered() // a build ahead of use at its pause
			close(waited)
		})
	}()
	hang(t, waited, "a build paused for the request that waits for it")
	hang(t, after, "awaiting did not return")
	s.answerMu.Lock()
	n := s.answering
	s.answerMu.Unlock()
	if n != 1 {
		t.Fatalf("requests being answered after the wait: %d, want 1 (counted again)", n)
	}
	done()
	s.answerMu.Lock()
	defer s.answerMu.Unlock()
	if s.answering != 0 {
		t.Errorf("requests being answered: %d, want 0", s.answering)
	}
}
