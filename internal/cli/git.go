package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/culprit-dev/culprit/internal/store"
)

// git runs git in the current directory and returns its trimmed output.
func git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg := strings.TrimSpace(errb.String())
			if i := strings.IndexByte(msg, '\n'); i >= 0 {
				msg = msg[:i]
			}
			return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), strings.TrimPrefix(msg, "fatal: "))
		}
		return "", fmt.Errorf("running git: %w (is git installed?)", err)
	}
	return strings.TrimSpace(out.String()), nil
}

// repoRoot is the top of the git working tree culprit runs in.
func repoRoot() (string, error) {
	root, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("not in a git repository: culprit keeps runs per git commit, so run it inside the repository of the program (%w)", err)
	}
	return root, nil
}

// commitOf resolves a revision to a full commit hash and its commit time.
func commitOf(rev string) (string, int64, error) {
	out, err := git("rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil || out == "" {
		if _, rerr := repoRoot(); rerr != nil {
			return "", 0, rerr
		}
		return "", 0, fmt.Errorf("%q is not a commit of this repository", rev)
	}
	ts, err := git("show", "-s", "--format=%ct", out)
	if err != nil {
		return "", 0, err
	}
	t, _ := strconv.ParseInt(ts, 10, 64)
	return out, t, nil
}

// dirtyFiles lists the tracked files with uncommitted changes (staged or
// not). Untracked files (build outputs, recordings, the store) do not count.
func dirtyFiles() ([]string, error) {
	cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=no")
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git status: %w", err)
	}
	out := string(b)
	var files []string
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 3 {
			files = append(files, strings.TrimSpace(l[3:]))
		}
	}
	return files, nil
}

// ancestors lists rev and its ancestors, newest first (at most n).
func ancestors(rev string, n int) ([]string, error) {
	out, err := git("rev-list", "--topo-order", "-n", strconv.Itoa(n), rev)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// storeSpec is --store, else $CULPRIT_STORE, else .culprit at the root of
// the repository culprit runs in.
var storeSpec string

const storeHelp = "where runs are stored: a directory (SQLite) or a postgres:// URL (default $CULPRIT_STORE, else .culprit/ at the root of the git repository)"

func openStore() (*store.Store, error) {
	spec := storeSpec
	if spec == "" {
		spec = os.Getenv("CULPRIT_STORE")
	}
	if spec == "" {
		root, err := repoRoot()
		if err != nil {
			return nil, err
		}
		spec = filepath.Join(root, store.Dir)
	}
	return store.Open(spec)
}
