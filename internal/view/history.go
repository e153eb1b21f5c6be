package view

import (
	"html/template"
	"io"
	"net/http"

	"github.com/culprit-dev/culprit/internal/render"
)

// The pages of the history store: the runs stored per commit with HEAD
// checked against its nearest stored ancestor, and the models of HEAD's
// runs. cli hands over functions that read the store (Inputs.Runs,
// Models, Check); each runs on its page's first request.

func needsStore(s *Server) string {
	if s.in.Runs == nil {
		return "needs runs stored in the history of the git repository culprit view runs in: culprit run --param n=N -- CMD (docs/history.md)"
	}
	return ""
}

var historyPage = Page{
	Path:  "history",
	Title: "Stored runs",
	About: "the runs stored per commit (culprit history list) and HEAD against its nearest ancestor with stored runs: the functions that got slower or faster (culprit check)",
	Needs: needsStore,
	Handler: func(s *Server) http.Handler {
		var page memo[[]section]
		build := func() ([]section, error) {
			runs, err := s.in.Runs()
			if err != nil {
				return nil, err
			}
			t, err := text(func(w io.Writer) error { return render.HistoryText(w, runs) })
			if err != nil {
				return nil, err
			}
			secs := []section{{ID: "runs", Title: "Runs per commit, newest first", Text: t}}
			c := section{ID: "check", Title: "HEAD against its nearest ancestor with stored runs"}
			if s.in.Check == nil {
				return secs, nil
			}
			if h, res, err := s.in.Check(); err != nil {
				c.Text = err.Error()
			} else if c.Text, err = text(func(w io.Writer) error { return render.CheckText(w, h, res) }); err != nil {
				return nil, err
			}
			return append(secs, c), nil
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			secs, err := page.get(build)
			if err != nil {
				s.fail(w, "Stored runs", err)
				return
			}
			s.report(w, "Stored runs", Range{}, secs)
		})
	},
}

var modelsPage = Page{
	Path:  "models",
	Title: "Models",
	About: "how each function's time grows with the input parameter across HEAD's stored runs: the best fitting model and its curve over the runs' points (culprit models)",
	Needs: needsStore,
	Handler: func(s *Server) http.Handler {
		var page memo[[]section]
		build := func() ([]section, error) {
			fs, x, err := s.in.Models()
			if err != nil {
				return nil, err
			}
			t, err := text(func(w io.Writer) error { return render.ModelsText(w, fs, x, "s") })
			if err != nil {
				return nil, err
			}
			svg, err := text(func(w io.Writer) error { return render.ModelsSVG(w, fs, x, "s") })
			if err != nil {
				return nil, err
			}
			return []section{
				{ID: "models", Title: "Models against " + x, Text: t},
				{ID: "curves", Title: "Self time against " + x + ": the runs and the fitted curves", Drawing: template.HTML(svg)},
			}, nil
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			secs, err := page.get(build)
			if err != nil {
				s.fail(w, "Models", err)
				return
			}
			s.report(w, "Models", Range{}, secs)
		})
	},
}
