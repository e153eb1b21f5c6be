package view

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/culprit-dev/culprit/internal/render"
	"github.com/culprit-dev/culprit/internal/store"
)

// The pages of the history store: the runs stored per commit, a commit
// checked against its nearest stored ancestor, and the models of a
// commit's runs. cli hands over functions that read the store
// (Inputs.Runs, Models, Check). Both pages list the stored commits, each
// linking to its check and its models; the commit shown is the rev
// parameter, HEAD without one. A rev must name a stored commit (its hash
// or a prefix of it), so no parameter reaches git or a file.

func needsStore(s *Server) string {
	if s.in.Runs == nil {
		return "needs runs stored in the history of the git repository culprit view runs in: culprit run --param n=N -- CMD (docs/history.md)"
	}
	return ""
}

// storedCommit is one commit of the store as the commit list shows it.
type storedCommit struct {
	Hash, Short string
	Time        string
	Runs        int
	Workloads   string
	Selected    bool
}

// commits lists the stored commits, newest first, marking sel (a full
// hash; "" for HEAD, which is not known here).
func commits(runs []store.Run, sel string) []storedCommit {
	var out []storedCommit
	at := map[string]int{}
	work := map[string][]string{}
	for _, r := range runs {
		i, ok := at[r.Commit]
		if !ok {
			i = len(out)
			at[r.Commit] = i
			short := r.Commit
			if len(short) > 12 {
				short = short[:12]
			}
			out = append(out, storedCommit{Hash: r.Commit, Short: short,
				Time: time.Unix(r.CommitTime, 0).UTC().Format("2006-01-02 15:04"), Selected: r.Commit == sel})
		}
		out[i].Runs++
		if !slices.Contains(work[r.Commit], r.Workload) {
			work[r.Commit] = append(work[r.Commit], r.Workload)
		}
	}
	times := map[string]int64{}
	for _, r := range runs {
		times[r.Commit] = r.CommitTime
	}
	for i := range out {
		out[i].Workloads = strings.Join(work[out[i].Hash], ", ")
	}
	slices.SortStableFunc(out, func(a, b storedCommit) int {
		return int(times[b.Hash] - times[a.Hash])
	})
	return out
}

var hexRE = regexp.MustCompile(`^[0-9a-f]{4,64}$`)

// storedRev returns the stored commit the rev parameter q names (its
// hash or a unique prefix of it), "" for no parameter.
func storedRev(q string, runs []store.Run) (string, error) {
	if q == "" {
		return "", nil
	}
	if !hexRE.MatchString(q) {
		return "", fmt.Errorf("rev %q: want the hash of a stored commit (or its first 4 or more digits)", q)
	}
	var found string
	for _, r := range runs {
		if strings.HasPrefix(r.Commit, q) {
			if found != "" && found != r.Commit {
				return "", fmt.Errorf("rev %q names more than one stored commit: give more digits", q)
			}
			found = r.Commit
		}
	}
	if found == "" {
		return "", fmt.Errorf("rev %q: no stored runs of such a commit", q)
	}
	return found, nil
}

// commitList draws the stored commits as links to page ("history" or
// "models") of each.
func commitList(runs []store.Run, sel string) (section, error) {
	var b bytes.Buffer
	err := templates.ExecuteTemplate(&b, "commits", commits(runs, sel))
	return section{ID: "commits", Title: "Stored commits, newest first", HTML: template.HTML(b.String())}, err
}

// revPage is a page of the store shown per commit: build makes its
// sections for a stored commit's full hash ("" for HEAD).
func revPage(s *Server, title string, build func(runs []store.Run, rev string) ([]section, error)) http.Handler {
	var pages memos[string, []byte]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs, err := s.in.Runs()
		if err != nil {
			s.fail(w, title, err)
			return
		}
		rev, err := storedRev(r.URL.Query().Get("rev"), runs)
		if err != nil {
			s.badRange(w, title, err)
			return
		}
		body, err := pages.get(rev, func(rev string) ([]byte, error) {
			list, err := commitList(runs, rev)
			if err != nil {
				return nil, err
			}
			secs, err := build(runs, rev)
			if err != nil {
				return nil, err
			}
			var b bytes.Buffer
			s.report(&b, title, Range{}, append([]section{list}, secs...))
			return b.Bytes(), nil
		})
		if err != nil {
			s.fail(w, title, err)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(body)
	})
}

// revName is how a page names the commit rev ("" for HEAD).
func revName(rev string) string {
	if rev == "" {
		return "HEAD"
	}
	return rev[:min(12, len(rev))]
}

var historyPage = Page{
	Path:  "history",
	Title: "Stored runs",
	About: "the runs stored per commit (culprit history list) and a commit against its nearest ancestor with stored runs: the functions that got slower or faster (culprit check)",
	Needs: needsStore,
	Handler: func(s *Server) http.Handler {
		return revPage(s, "Stored runs", func(runs []store.Run, rev string) ([]section, error) {
			t, err := text(func(w io.Writer) error { return render.HistoryText(w, runs) })
			if err != nil {
				return nil, err
			}
			secs := []section{{ID: "runs", Title: "Runs per commit, newest first", Text: t}}
			if s.in.Check == nil {
				return secs, nil
			}
			c := section{ID: "check", Title: revName(rev) + " against its nearest ancestor with stored runs"}
			target := rev
			if target == "" {
				target = "HEAD"
			}
			if h, res, err := s.in.Check(target); err != nil {
				c.Text = err.Error()
			} else if c.Text, err = text(func(w io.Writer) error { return render.CheckText(w, h, res) }); err != nil {
				return nil, err
			}
			return append(secs, c), nil
		})
	},
}

var modelsPage = Page{
	Path:  "models",
	Title: "Models",
	About: "how each function's time grows with the input parameter across a commit's stored runs (HEAD's, or a commit picked from the list): the best fitting model and its curve over the runs' points (culprit models)",
	Needs: needsStore,
	Handler: func(s *Server) http.Handler {
		return revPage(s, "Models", func(runs []store.Run, rev string) ([]section, error) {
			target := rev
			if target == "" {
				target = "HEAD"
			}
			fs, x, err := s.in.Models(target)
			if err != nil {
				return []section{{ID: "models", Title: "Models of " + revName(rev), Text: err.Error()}}, nil
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
				{ID: "models", Title: "Models of " + revName(rev) + " against " + x, Text: t},
				{ID: "curves", Title: "Self time against " + x + ": the runs and the fitted curves", Drawing: template.HTML(svg)},
			}, nil
		})
	},
}
