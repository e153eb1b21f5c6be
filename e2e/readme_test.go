package e2e

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// readmeCommands returns the shell commands of the README's "Try it"
// section, in order.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.Root(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## Try it")
	if i < 0 {
		t.Fatal(`README.md has no "## Try it" section`)
	}
	s = s[i:]
	if j := strings.Index(s[1:], "\n## "); j >= 0 {
		s = s[:j+1]
	}
	var cmds []string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(s, -1) {
		cmds = append(cmds, strings.TrimSpace(block[1]))
	}
	return cmds
}

// copyTree copies the repository's sources (not .git, nor what builds and
// runs leave) into dir.
func copyTree(t *testing.T, dir string) {
	t.Helper()
	root := testutil.Root()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		skip := rel == ".git" || rel == filepath.Join("bench", "out") || rel == "culprit-demo"
		switch {
		case skip && d.IsDir():
			return filepath.SkipDir
		case skip:
			return nil // .git is a file in a worktree
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		case rel == "culprit" || strings.HasSuffix(rel, ".rec") || !d.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatalf("copying the repository: %v", err)
	}
}

// The README's first command, as written, in a copy of the repository:
// it builds culprit and runs the demo, which answers its question with the
// figures its reports show. Its claim about perf is checked with perf.
func TestReadmeDemo(t *testing.T) {
	testutil.NeedRoot(t)
	cmds := readmeCommands(t)
	if len(cmds) < 2 || !strings.Contains(cmds[0], "culprit demo") || !strings.Contains(cmds[1], "go test") {
		t.Fatalf("README's Try it commands: %q, want the demo's, then the tests'", cmds)
	}
	dir := t.TempDir()
	copyTree(t, dir)
	cmd := exec.Command("sh", "-c", cmds[0])
	cmd.Dir = dir
	// -trimpath, as TestMain builds, so that go build in the copy finds
	// the packages compiled already (the cache keys them by directory
	// otherwise).
	cmd.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+string(os.PathListSeparator)+filepath.Join(runtime.GOROOT(), "bin"),
		"GOFLAGS=-trimpath")
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmds[0], err, out)
	}
	for _, want := range []string{"Why is culprit-demo/demo slow?", "checksum <- large_request <- main", "checksum <- small_request <- main",
		"What perf cannot show", "add --kernel include", "Next:", "culprit report --list '^main$' culprit-demo.rec"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	// By CPU time large requests hold 2/3, small ones 1/3; the demo's
	// figures come from its recording.
	m := regexp.MustCompile(`large_request calls it for (\d+)% of the time, small_request for (\d+)%`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("demo output lacks its answer:\n%s", out)
	}
	large, _ := strconv.Atoi(m[1])
	small, _ := strconv.Atoi(m[2])
	if large < 55 || large > 78 || small < 22 || small > 45 {
		t.Errorf("demo: large requests %d%%, small %d%%; want about 67 and 33", large, small)
	}
	if _, err := os.Stat(filepath.Join(dir, "culprit-demo.rec")); err != nil {
		t.Errorf("demo recording not kept: %v", err)
	}
	// The program stays beside the recording: later reports name its frames.
	later := exec.Command(filepath.Join(dir, "culprit"), "report", "--peek", "^checksum$", "culprit-demo.rec")
	later.Dir = dir
	if b, err := later.CombinedOutput(); err != nil || strings.Contains(string(b), "warning") || !strings.Contains(string(b), "<- large_request") {
		t.Errorf("report on the demo's recording afterwards: %v\n%s", err, b)
	}

	// What the demo says of perf record -g: a sample in checksum has main
	// as its caller, never the request that called it. -N leaves perf's
	// build-id cache alone.
	perf := testutil.NeedTool(t, "perf")
	data := filepath.Join(dir, "perf.data")
	if b, err := exec.Command(perf, "record", "-q", "-N", "-g", "-o", data, filepath.Join(dir, "culprit-demo", "demo"), "10").CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, b)
	}
	script, err := exec.Command(perf, "script", "-i", data, "-F", "ip,sym").Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	inChecksum, underRequest := 0, 0
	var stack []string
	flush := func() {
		if len(stack) >= 2 && stack[0] == "checksum" {
			inChecksum++
			if strings.HasSuffix(stack[1], "_request") {
				underRequest++
			}
		}
		stack = stack[:0]
	}
	sc := bufio.NewScanner(strings.NewReader(string(script)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			flush()
			continue
		}
		if len(f) >= 2 {
			stack = append(stack, f[1])
		}
	}
	flush()
	if inChecksum < 50 || underRequest > 0 {
		t.Errorf("perf record -g: %d samples in checksum, %d with a request as its caller; the demo says perf loses that caller", inChecksum, underRequest)
	}

	v := mustRun(t, "version")
	if !strings.HasPrefix(v, "culprit ") || !strings.Contains(v, "recording format 1.") {
		t.Errorf("version: %q", v)
	}
}
