package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/culprit-dev/culprit/internal/render"
)

// maxSourceBytes bounds the source files report --list reads.
const maxSourceBytes = 16 << 20

// sourceReader returns a render.Source that reads the source files named by
// debug information: at the recorded path (relative paths from the current
// directory), then under each directory of dirs (colon-separated, as pprof's
// -source_path), trying the path's trailing components from the longest:
// /build/app/src/x.c is looked for as DIR/build/app/src/x.c, DIR/app/src/x.c,
// DIR/src/x.c, then DIR/x.c. Files are read once. A file modified after the
// object that names it was built comes with a note: its lines may have
// moved since.
func sourceReader(dirs string) render.Source {
	type entry struct {
		sf  *render.SourceFile
		mod int64 // mtime, ns
	}
	cache := map[string]entry{}
	var roots []string
	for _, d := range filepath.SplitList(dirs) {
		if rest, ok := strings.CutPrefix(d, "~/"); ok { // --source-path=~/src: no shell expanded it
			if home, err := os.UserHomeDir(); err == nil {
				d = filepath.Join(home, rest)
			}
		}
		if d != "" {
			roots = append(roots, d)
		}
	}
	return func(file, object string) *render.SourceFile {
		e, ok := cache[file]
		if !ok {
			candidates := []string{file}
			parts := strings.Split(filepath.ToSlash(filepath.Clean(file)), "/")
			for _, r := range roots {
				for i := range parts {
					if rest := filepath.Join(parts[i:]...); rest != "" {
						candidates = append(candidates, filepath.Join(r, rest))
					}
				}
			}
			for _, c := range candidates {
				if lines, mod, ok := readLines(c); ok {
					e = entry{&render.SourceFile{Lines: lines, FoundAt: c}, mod}
					break
				}
			}
			cache[file] = e
		}
		if e.sf == nil {
			return nil
		}
		sf := *e.sf
		if st, err := os.Stat(object); err == nil && e.mod > st.ModTime().UnixNano() {
			sf.Note = fmt.Sprintf("modified after %s was built: its lines may have moved", filepath.Base(object))
		}
		return &sf
	}
}

// readLines reads a regular text file of at most maxSourceBytes as lines,
// with its modification time.
func readLines(path string) ([]string, int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxSourceBytes {
		return nil, 0, false
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxSourceBytes)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if sc.Err() != nil {
		return nil, 0, false
	}
	return lines, st.ModTime().UnixNano(), true
}
