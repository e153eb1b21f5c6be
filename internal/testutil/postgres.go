package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"
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

// Postgres starts a PostgreSQL server of the test's own, with its own data
// directory, listening on a free loopback port, and returns a URL of its
// database; the server is stopped when the test ends. As root the server runs
// as the postgres user (PostgreSQL refuses to run as root). Without a server
// installed it skips, or fails in CI.
func Postgres(t testing.TB) string {
	t.Helper()
	initdb, pgctl := postgresBin("initdb"), postgresBin("pg_ctl")
	Need(t, initdb != "" && pgctl != "", "PostgreSQL server programs (apt-get install postgresql)")
	dir, err := os.MkdirTemp("", "culprit-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
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
		runuser := "runuser"
		if _, err := exec.LookPath(runuser); err != nil {
			t.Fatalf("runuser not found: needed to run the PostgreSQL server as postgres")
		}
		asUser = func(args ...string) *exec.Cmd {
			return exec.Command(runuser, append([]string{"-u", "postgres", "--"}, args...)...)
		}
	} else {
		asUser = func(args ...string) *exec.Cmd { return exec.Command(args[0], args[1:]...) }
	}
	if out, err := asUser(initdb, "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=off", port, dir)
	if out, err := asUser(pgctl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	t.Cleanup(func() {
		if out, err := asUser(pgctl, "-D", data, "-m", "fast", "-w", "stop").CombinedOutput(); err != nil {
			t.Errorf("pg_ctl stop: %v\n%s", err, out)
		}
	})
	// pg_ctl -w returns when the server accepts connections; check the port.
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PostgreSQL does not accept connections on port %d: %v", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
}
