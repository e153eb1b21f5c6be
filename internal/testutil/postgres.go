package testutil

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" database/sql driver
)

// postgresBin finds a PostgreSQL server program (initdb, pg_ctl, postgres)
// on PATH or in Debian's /usr/lib/postgresql/<version>/bin.
func postgresBin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(m) > 0 {
		return m[len(m)-1]
	}
	return ""
}

// pgServer is the server the tests of one test binary share.
var pgServer struct {
	sync.Mutex
	url  string // of the postgres database
	stop func() error
	n    int
}

// Postgres returns the URL of a new, empty database on a PostgreSQL server
// of the test binary's own (its own data directory, a free loopback port),
// started at the first call; call StopPostgres from TestMain to stop it. As
// root the server runs as the postgres user (PostgreSQL refuses to run as
// root). Without a server installed it skips, or fails in CI.
func Postgres(t testing.TB) string {
	t.Helper()
	pgServer.Lock()
	defer pgServer.Unlock()
	if pgServer.url == "" {
		startPostgres(t)
	}
	pgServer.n++
	name := fmt.Sprintf("culprit_test_%d", pgServer.n)
	db, err := sql.Open("pgx", pgServer.url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	return strings.Replace(pgServer.url, "/postgres?", "/"+name+"?", 1)
}

// StopPostgres stops the server Postgres started, if any.
func StopPostgres() error {
	pgServer.Lock()
	defer pgServer.Unlock()
	if pgServer.stop == nil {
		return nil
	}
	err := pgServer.stop()
	pgServer.url, pgServer.stop = "", nil
	return err
}

func startPostgres(t testing.TB) {
	t.Helper()
	initdb, pgctl := postgresBin("initdb"), postgresBin("pg_ctl")
	Need(t, initdb != "" && pgctl != "", "PostgreSQL server programs (apt-get install postgresql)")
	dir, err := os.MkdirTemp("", "culprit-pg-")
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	var asUser func(args ...string) *exec.Cmd
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		Need(t, err == nil, "a postgres user to run the PostgreSQL server as (apt-get install postgresql)")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		if _, err := exec.LookPath("runuser"); err != nil {
			t.Fatalf("runuser not found: needed to run the PostgreSQL server as postgres")
		}
		asUser = func(args ...string) *exec.Cmd {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--"}, args...)...)
		}
	} else {
		asUser = func(args ...string) *exec.Cmd { return exec.Command(args[0], args[1:]...) }
	}
	if out, err := asUser(initdb, "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// pg_ctl runs the server as a daemon, which outlives the test binary
	// if it dies before TestMain's StopPostgres (a -timeout panic, a
	// kill). A watcher process reads a pipe only this process holds: at
	// its end-of-file, however this process ended, it stops the server
	// and removes its directory (nothing is left to do after a clean
	// StopPostgres).
	stop := asUser(pgctl, "-D", data, "-m", "immediate", "-w", "stop")
	if err := watchExit(stop.Args, dir); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("starting the PostgreSQL watcher: %v", err)
	}
	// The port is free when chosen but another process may take it before
	// the server binds it: try again with another.
	var port int
	for attempt := 1; ; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=off", port, dir)
		out, err := asUser(pgctl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start").CombinedOutput()
		if err == nil {
			break
		}
		if attempt == 3 {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			os.RemoveAll(dir)
			t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
		}
	}
	pgServer.stop = func() error {
		defer os.RemoveAll(dir)
		if out, err := asUser(pgctl, "-D", data, "-m", "fast", "-w", "stop").CombinedOutput(); err != nil {
			return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
		}
		return nil
	}
	// pg_ctl -w returns when the server accepts connections; check the port.
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			pgServer.stop()
			t.Fatalf("PostgreSQL does not accept connections on port %d: %v", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pgServer.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
}

// watcher is the pipe's write end the PostgreSQL watcher waits on; it is
// never written and never closed (it is close-on-exec: nothing else the
// test binary starts holds it).
var watcher *os.File

// watchExit starts a process that, when this process has exited, runs
// stop (a command line) and removes dir. It has a process group of its
// own, so that a signal to the test binary's group does not reach it.
func watchExit(stop []string, dir string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	// cat returns at end-of-file: when the last holder of w, this
	// process, has ended.
	cmd := exec.Command("sh", append([]string{"-c", `cat >/dev/null; "$@" >/dev/null 2>&1; rm -rf "$0"`, dir}, stop...)...)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	go cmd.Wait() // it ends after this process, unless its shell failed
	watcher = w
	return nil
}
