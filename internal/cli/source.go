package cli

import (
	"bufio"
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
// DIR/src/x.c, then DIR/x.c. Files are read once.
func sourceReader(dirs string) render.Source {
	type entry struct {
		lines []string
		at    string
		ok    bool
	}
	cache := map[string]entry{}
	var roots []string
	for _, d := range filepath.SplitList(dirs) {
		if d != "" {
			roots = append(roots, d)
		}
	}
	return func(file string) ([]string, string, bool) {
		if e, ok := cache[file]; ok {
			return e.lines, e.at, e.ok
		}
		var e entry
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
			if lines, ok := readLines(c); ok {
				e = entry{lines, c, true}
				break
			}
		}
		cache[file] = e
		return e.lines, e.at, e.ok
	}
}

// readLines reads a regular text file of at most maxSourceBytes as lines.
func readLines(path string) ([]string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxSourceBytes {
		return nil, false
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxSourceBytes)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if sc.Err() != nil {
		return nil, false
	}
	return lines, true
}
