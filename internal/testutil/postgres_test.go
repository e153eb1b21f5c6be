package testutil

import (
	"bufio"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// A test binary killed before its TestMain stops the server (as a -timeout
// panic or a SIGKILL does) leaves no PostgreSQL server and no data
// directory behind.
func TestPostgresDiesWithTestBinary(t *testing.T) {
	if os.Getenv("CULPRIT_TEST_POSTGRES_HOLD") != "" {
		// The test binary to be killed: start the server, say where, wait.
		url := Postgres(t)
		os.Stdout.WriteString("URL " + url + "\n")
		select {}
	}
	Need(t, postgresBin("initdb") != "", "PostgreSQL server programs (apt-get install postgresql)")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPostgresDiesWithTestBinary$", "-test.v")
	cmd.Env = append(os.Environ(), "CULPRIT_TEST_POSTGRES_HOLD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var url string
	sc := bufio.NewScanner(out)
	var lines []string
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
			url = u
			break
		}
		lines = append(lines, sc.Text())
	}
	if url == "" {
		cmd.Wait()
		t.Fatalf("the test binary started no server:\n%s", strings.Join(lines, "\n"))
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	var data string
	err = db.QueryRow("SHOW data_directory").Scan(&data)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	pidFile, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	if err != nil || pid <= 0 {
		t.Fatalf("postmaster.pid: %q", pidFile)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// Wait for the server to go; the bound only ends a wait for something
	// that is not coming.
	const bound = 2 * time.Minute
	deadline := time.Now().Add(bound)
	for {
		_, statErr := os.Stat(filepath.Dir(data))
		gone := errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) && errors.Is(statErr, os.ErrNotExist)
		if gone {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGQUIT)
			t.Fatalf("%v after the test binary was killed: server %d running: %v, its directory %s there: %v",
				bound, pid, syscall.Kill(pid, 0) == nil, filepath.Dir(data), statErr == nil)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
