// Package store keeps runs of a program keyed by git commit: each run's
// recording (by content hash), what was run (command, workload, parameters,
// collector options) and per-function statistics computed when it was added,
// so that models and checks across commits read a few rows instead of
// re-reading and re-symbolizing recordings whose binaries may be gone.
//
// Two back ends share one schema and one set of versioned migrations:
//
//   - SQLite (modernc.org/sqlite, pure Go, so the binary stays static), the
//     default, in .culprit/history.db at the repository root. Recordings are
//     files .culprit/recordings/<sha256>.rec beside the database. The
//     database runs in WAL mode with a busy timeout and takes its write lock
//     at the start of each transaction, so concurrent writers (two CI jobs on
//     one machine) wait for each other instead of failing or losing runs.
//   - PostgreSQL (github.com/jackc/pgx), for a store shared by a team or by
//     CI machines: postgres://... given as the store. Recordings are kept in
//     the database, in a bytea column of a table keyed by content hash: a
//     file beside the database would be on one machine only, and bytea
//     (rather than large objects) is deleted with its row, needs no
//     lo_unlink bookkeeping, and fits recordings (tens of KiB to a few tens
//     of MiB, far below bytea's 1 GiB). Readers copy a recording once into
//     the user's cache directory, where the analyses read files from.
//
// The package does not read recordings or know git; it stores what it is
// given.
package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" database/sql driver
	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite" // "sqlite" database/sql driver

	"github.com/culprit-dev/culprit/internal/userfile"
)

// Dir is the directory, at a repository's root, of the default store.
const Dir = ".culprit"

// Run is one stored run.
type Run struct {
	ID         int64
	Commit     string // full commit hash
	CommitTime int64  // unix seconds of the commit, for ordering
	Dirty      bool   // recorded from a working tree with uncommitted changes
	Workload   string
	Command    []string
	Params     map[string]string
	// Config holds the collector options that decide whether two runs are
	// comparable (event, frequency, call graph), as "key=value" words.
	Config    string
	Recording string // sha256 of the recording file, hex
	Size      int64  // bytes of the recording
	Samples   int64
	CPU       int64 // ns of CPU time sampled
	Added     time.Time
}

// ExprParam prefixes the parameters that hold a sampled expression's mean
// over the run ("expr:q->len"): measurements, not inputs, so they are not
// part of the pairing key.
const ExprParam = "expr:"

// PairKey is what two runs must share to be compared: workload, parameters
// (but not sampled expressions) and collector options (the command is part of
// the workload: its default name is the program's base name).
func (r *Run) PairKey() string {
	return r.Workload + "\x00" + ParamString(InputParams(r.Params)) + "\x00" + r.Config
}

// InputParams returns the parameters without sampled expressions.
func InputParams(p map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range p {
		if !strings.HasPrefix(k, ExprParam) {
			out[k] = v
		}
	}
	return out
}

// ParamString writes parameters as sorted "k=v" words.
func ParamString(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + p[k])
	}
	return b.String()
}

// Func is one function's statistics in a run.
type Func struct {
	Name, Object string
	Self, Total  int64 // samples with the function innermost / anywhere on the stack
	SelfNS       int64 // ns of CPU time: self share times the run's CPU time
	TotalNS      int64
}

// Traced is one traced function's call statistics in a run (ns).
type Traced struct {
	Name, Object                string
	Calls, Estimated            int64 // calls recorded; estimated made (every-N-th tracing)
	InclTotal, InclP50, InclP99 int64
	InclMax                     int64
	InclMean                    float64
	ExclTotal                   int64 // without the traced calls it made
	ExclMean                    float64
	// Sample is the N of every-N-th tracing (1: every call); InclSpread
	// and ExclSpread the quartiles of the calls' durations. Runs stored
	// before the store kept them have Sample 0 and spreads not Known.
	Sample                 int64
	InclSpread, ExclSpread Spread
}

// Spread is how a function's call durations (ns) spread: minimum,
// quartiles (linear interpolation, numpy's default) and maximum.
type Spread struct {
	Known                    bool
	Min, Q1, Median, Q3, Max float64
}

// Store is an open store.
type Store struct {
	db       *sql.DB
	postgres bool
	dir      string // SQLite: the directory holding the database and recordings
	cache    string // Postgres: where recordings are copied for reading
	where    string
}

// values gives the spread's columns (Min, Q1, Median, Q3, Max), NULL when
// not known.
func (p Spread) values() [5]sql.NullFloat64 {
	var out [5]sql.NullFloat64
	for i, v := range []float64{p.Min, p.Q1, p.Median, p.Q3, p.Max} {
		out[i] = sql.NullFloat64{Float64: v, Valid: p.Known}
	}
	return out
}

func spreadOf(v [5]sql.NullFloat64) Spread {
	if !v[0].Valid {
		return Spread{}
	}
	return Spread{Known: true, Min: v[0].Float64, Q1: v[1].Float64, Median: v[2].Float64, Q3: v[3].Float64, Max: v[4].Float64}
}

// IsPostgres says whether spec names a PostgreSQL database.
func IsPostgres(spec string) bool {
	return strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://")
}

// Open opens (creating and migrating as needed) the store spec: a
// postgres:// URL, or a directory for SQLite (created if missing).
func Open(spec string) (*Store, error) {
	if IsPostgres(spec) {
		return openPostgres(spec)
	}
	return openSQLite(spec)
}

func openSQLite(dir string) (*Store, error) {
	// The store keeps recordings and what was measured of them: its files
	// are the user's alone, as recordings are (userfile).
	if err := userfile.MkdirAll(filepath.Join(dir, "recordings")); err != nil {
		return nil, fmt.Errorf("creating the store: %w", err)
	}
	// Nothing of the store belongs in the repository.
	ign := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(ign); errors.Is(err, os.ErrNotExist) {
		if err := userfile.Replace(ign, func(f *os.File) error {
			_, err := f.WriteString("*\n")
			return err
		}); err != nil {
			return nil, fmt.Errorf("creating the store: %w", err)
		}
	}
	path := filepath.Join(dir, "history.db")
	// Turning a new database into WAL mode takes an exclusive lock without
	// waiting on the busy timeout, so two processes opening a new store at
	// once could see "database is locked". Opening and migrating are
	// serialised by a lock file; writes after that wait on the busy timeout.
	unlock, err := lockFile(filepath.Join(dir, "open.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	// SQLite creates a database 0644 and gives its journal files the
	// database's mode and owner: create it first.
	if err := createUserFile(path); err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	s := &Store{db: db, dir: dir, where: path}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// createUserFile creates an empty file at path, userfile.FileMode and the
// user's under sudo, unless there is one.
func createUserFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, userfile.FileMode)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = userfile.Own(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// lockFile takes an exclusive advisory lock on path (created if needed)
// and returns its release.
func lockFile(path string) (func(), error) {
	if err := createUserFile(path); err != nil {
		return nil, fmt.Errorf("creating the store's lock: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the store's lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

func openPostgres(url string) (*Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", redact(url), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to %s: %w", redact(url), err)
	}
	cache, _ := os.UserCacheDir()
	if cache == "" {
		cache = os.TempDir()
	}
	s := &Store{db: db, postgres: true, cache: filepath.Join(cache, "culprit", "recordings"), where: redact(url)}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", redact(url), err)
	}
	return s, nil
}

// redact hides a password in a URL.
func redact(url string) string {
	at := strings.LastIndex(url, "@")
	scheme := strings.Index(url, "://")
	if at < 0 || scheme < 0 {
		return url
	}
	userinfo := url[scheme+3 : at]
	if i := strings.Index(userinfo, ":"); i >= 0 {
		return url[:scheme+3] + userinfo[:i] + ":xxxxx" + url[at:]
	}
	return url
}

// Where names the store for messages.
func (s *Store) Where() string { return s.where }

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// q rewrites ? placeholders as $n for PostgreSQL.
func (s *Store) q(query string) string {
	if !s.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// migrations are applied in order; each runs once, in a transaction, and is
// recorded in schema_migrations. Never edit one that was released: add one.
var migrations = []struct{ sqlite, postgres string }{
	{
		sqlite: `
CREATE TABLE runs (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	commit_hash TEXT NOT NULL,
	commit_time INTEGER NOT NULL,
	dirty       INTEGER NOT NULL,
	workload    TEXT NOT NULL,
	command     TEXT NOT NULL,
	params      TEXT NOT NULL,
	config      TEXT NOT NULL,
	recording   TEXT NOT NULL,
	size        INTEGER NOT NULL,
	samples     INTEGER NOT NULL,
	cpu_ns      INTEGER NOT NULL,
	added       INTEGER NOT NULL
);
CREATE INDEX runs_commit ON runs(commit_hash);
CREATE TABLE functions (
	run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	name     TEXT NOT NULL,
	object   TEXT NOT NULL,
	self     INTEGER NOT NULL,
	total    INTEGER NOT NULL,
	self_ns  INTEGER NOT NULL,
	total_ns INTEGER NOT NULL,
	PRIMARY KEY (run_id, name, object)
);`,
		postgres: `
CREATE TABLE runs (
	id          BIGSERIAL PRIMARY KEY,
	commit_hash TEXT NOT NULL,
	commit_time BIGINT NOT NULL,
	dirty       INTEGER NOT NULL,
	workload    TEXT NOT NULL,
	command     TEXT NOT NULL,
	params      TEXT NOT NULL,
	config      TEXT NOT NULL,
	recording   TEXT NOT NULL,
	size        BIGINT NOT NULL,
	samples     BIGINT NOT NULL,
	cpu_ns      BIGINT NOT NULL,
	added       BIGINT NOT NULL
);
CREATE INDEX runs_commit ON runs(commit_hash);
CREATE TABLE functions (
	run_id   BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	name     TEXT NOT NULL,
	object   TEXT NOT NULL,
	self     BIGINT NOT NULL,
	total    BIGINT NOT NULL,
	self_ns  BIGINT NOT NULL,
	total_ns BIGINT NOT NULL,
	PRIMARY KEY (run_id, name, object)
);
CREATE TABLE blobs (
	hash TEXT PRIMARY KEY,
	data BYTEA NOT NULL
);`,
	},
	{
		// Traced calls (culprit trace): per-function call statistics of a
		// run, Perun's Dynamic Stats.
		sqlite: `
CREATE TABLE traced (
	run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	object     TEXT NOT NULL,
	calls      INTEGER NOT NULL,
	estimated  INTEGER NOT NULL,
	incl_total INTEGER NOT NULL,
	incl_mean  REAL NOT NULL,
	incl_p50   INTEGER NOT NULL,
	incl_p99   INTEGER NOT NULL,
	incl_max   INTEGER NOT NULL,
	excl_total INTEGER NOT NULL,
	excl_mean  REAL NOT NULL,
	PRIMARY KEY (run_id, name, object)
);`,
		postgres: `
CREATE TABLE traced (
	run_id     BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	object     TEXT NOT NULL,
	calls      BIGINT NOT NULL,
	estimated  BIGINT NOT NULL,
	incl_total BIGINT NOT NULL,
	incl_mean  DOUBLE PRECISION NOT NULL,
	incl_p50   BIGINT NOT NULL,
	incl_p99   BIGINT NOT NULL,
	incl_max   BIGINT NOT NULL,
	excl_total BIGINT NOT NULL,
	excl_mean  DOUBLE PRECISION NOT NULL,
	PRIMARY KEY (run_id, name, object)
);`,
	},
	{
		sqlite:   migrationSpread("REAL"),
		postgres: migrationSpread("DOUBLE PRECISION"),
	},
}

// migrationSpread adds Perun's Dynamic Stats fields the traced table did not
// have: the sampling N and the quartiles of inclusive and exclusive
// durations (NULL for runs stored before).
func migrationSpread(real string) string {
	cols := []string{"sample BIGINT", "incl_min " + real, "incl_q1 " + real, "incl_median " + real, "incl_q3 " + real,
		"excl_min " + real, "excl_q1 " + real, "excl_median " + real, "excl_q3 " + real, "excl_max " + real}
	var b strings.Builder
	for _, c := range cols {
		b.WriteString("ALTER TABLE traced ADD COLUMN " + c + ";\n")
	}
	return b.String()
}

// SchemaVersion is the number of migrations this culprit knows.
var SchemaVersion = len(migrations)

func (s *Store) migrate() error {
	ctx := context.Background()
	create := `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied BIGINT NOT NULL)`
	if s.postgres {
		// Two processes creating the same table at once collide even with
		// IF NOT EXISTS; an advisory lock serialises them.
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`SELECT pg_advisory_xact_lock(7204721)`); err != nil {
			return err
		}
		if _, err := tx.Exec(create); err != nil {
			return err
		}
		if err := s.applyMigrations(tx); err != nil {
			return err
		}
		return tx.Commit()
	}
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: holds the write lock
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(create); err != nil {
		return err
	}
	if err := s.applyMigrations(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *Store) applyMigrations(tx *sql.Tx) error {
	var have int
	if err := tx.QueryRow(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return err
	}
	if have > len(migrations) {
		return fmt.Errorf("the store's schema is version %d, newer than this culprit knows (%d): upgrade culprit", have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		m := migrations[v-1].sqlite
		if s.postgres {
			m = migrations[v-1].postgres
		}
		if _, err := tx.Exec(m); err != nil {
			return fmt.Errorf("migrating the store to version %d: %w", v, err)
		}
		if _, err := tx.Exec(s.q(`INSERT INTO schema_migrations (version, applied) VALUES (?, ?)`), v, time.Now().Unix()); err != nil {
			return err
		}
	}
	return nil
}

// hashFile returns the sha256 of a file, hex.
func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func (s *Store) blobPath(hash string) string {
	return filepath.Join(s.dir, "recordings", hash+".rec")
}

// copyFile copies src to dst whole or not at all, 0600 and the user's
// under sudo (userfile.Replace): recordings hold copies of process memory.
func copyFile(dst string, src io.Reader) error {
	return userfile.Replace(dst, func(f *os.File) error {
		_, err := io.Copy(f, src)
		return err
	})
}

// Add stores the recording at path and the run with its function
// statistics and traced-call statistics, filling r.ID, r.Recording, r.Size
// and r.Added. The run and its statistics are written in one transaction.
func (s *Store) Add(r *Run, path string, funcs []Func, traced []Traced) error {
	hash, size, err := hashFile(path)
	if err != nil {
		return err
	}
	r.Recording, r.Size, r.Added = hash, size, time.Now()
	if !s.postgres {
		dst := s.blobPath(hash)
		if _, err := os.Stat(dst); err != nil {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			err = copyFile(dst, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("storing %s: %w", path, err)
			}
		}
	}
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.postgres {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO blobs (hash, data) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, hash, data); err != nil {
			return fmt.Errorf("storing %s: %w", path, err)
		}
	}
	cmd, _ := json.Marshal(r.Command)
	params, _ := json.Marshal(r.Params)
	if r.Params == nil {
		params = []byte("{}")
	}
	dirty := 0
	if r.Dirty {
		dirty = 1
	}
	err = tx.QueryRow(s.q(`INSERT INTO runs (commit_hash, commit_time, dirty, workload, command, params, config, recording, size, samples, cpu_ns, added)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		r.Commit, r.CommitTime, dirty, r.Workload, string(cmd), string(params), r.Config, hash, size, r.Samples, r.CPU, r.Added.UnixNano()).Scan(&r.ID)
	if err != nil {
		return fmt.Errorf("adding the run: %w", err)
	}
	stmt, err := tx.Prepare(s.q(`INSERT INTO functions (run_id, name, object, self, total, self_ns, total_ns) VALUES (?, ?, ?, ?, ?, ?, ?)`))
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, f := range funcs {
		if _, err := stmt.Exec(r.ID, f.Name, f.Object, f.Self, f.Total, f.SelfNS, f.TotalNS); err != nil {
			return fmt.Errorf("adding function statistics: %w", err)
		}
	}
	for _, t := range traced {
		sample := sql.NullInt64{Int64: t.Sample, Valid: t.Sample > 0}
		in, ex := t.InclSpread.values(), t.ExclSpread.values()
		if _, err := tx.Exec(s.q(`INSERT INTO traced (run_id, name, object, calls, estimated, incl_total, incl_mean, incl_p50, incl_p99, incl_max, excl_total, excl_mean,
			sample, incl_min, incl_q1, incl_median, incl_q3, excl_min, excl_q1, excl_median, excl_q3, excl_max)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), r.ID, t.Name, t.Object, t.Calls, t.Estimated, t.InclTotal, t.InclMean,
			t.InclP50, t.InclP99, t.InclMax, t.ExclTotal, t.ExclMean, sample, in[0], in[1], in[2], in[3], ex[0], ex[1], ex[2], ex[3], ex[4]); err != nil {
			return fmt.Errorf("adding traced-call statistics: %w", err)
		}
	}
	return tx.Commit()
}

const runColumns = `id, commit_hash, commit_time, dirty, workload, command, params, config, recording, size, samples, cpu_ns, added`

func scanRuns(rows *sql.Rows) ([]Run, error) {
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var dirty int
		var cmd, params string
		var added int64
		if err := rows.Scan(&r.ID, &r.Commit, &r.CommitTime, &dirty, &r.Workload, &cmd, &params, &r.Config, &r.Recording, &r.Size, &r.Samples, &r.CPU, &added); err != nil {
			return nil, err
		}
		r.Dirty = dirty != 0
		_ = json.Unmarshal([]byte(cmd), &r.Command)
		_ = json.Unmarshal([]byte(params), &r.Params)
		r.Added = time.Unix(0, added)
		out = append(out, r)
	}
	return out, rows.Err()
}

// Runs returns the stored runs, newest commit first (then newest added);
// with commits given, only the runs of those commits.
func (s *Store) Runs(commits ...string) ([]Run, error) {
	query := `SELECT ` + runColumns + ` FROM runs`
	var args []any
	if len(commits) > 0 {
		query += ` WHERE commit_hash IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(commits)), ", ") + `)`
		for _, c := range commits {
			args = append(args, c)
		}
	}
	query += ` ORDER BY commit_time DESC, commit_hash, id DESC`
	rows, err := s.db.Query(s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("reading runs: %w", err)
	}
	return scanRuns(rows)
}

// Get returns the run with the given id.
func (s *Store) Get(id int64) (Run, error) {
	rows, err := s.db.Query(s.q(`SELECT `+runColumns+` FROM runs WHERE id = ?`), id)
	if err != nil {
		return Run{}, err
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return Run{}, err
	}
	if len(runs) == 0 {
		return Run{}, fmt.Errorf("no run %d in the store (culprit history list shows them)", id)
	}
	return runs[0], nil
}

// Functions returns a run's function statistics, most self time first.
func (s *Store) Functions(runID int64) ([]Func, error) {
	rows, err := s.db.Query(s.q(`SELECT name, object, self, total, self_ns, total_ns FROM functions WHERE run_id = ? ORDER BY self_ns DESC, name`), runID)
	if err != nil {
		return nil, fmt.Errorf("reading function statistics: %w", err)
	}
	defer rows.Close()
	var out []Func
	for rows.Next() {
		var f Func
		if err := rows.Scan(&f.Name, &f.Object, &f.Self, &f.Total, &f.SelfNS, &f.TotalNS); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// TracedCalls returns a run's traced-call statistics, most inclusive time
// first.
func (s *Store) TracedCalls(runID int64) ([]Traced, error) {
	rows, err := s.db.Query(s.q(`SELECT name, object, calls, estimated, incl_total, incl_mean, incl_p50, incl_p99, incl_max, excl_total, excl_mean,
		sample, incl_min, incl_q1, incl_median, incl_q3, excl_min, excl_q1, excl_median, excl_q3, excl_max
		FROM traced WHERE run_id = ? ORDER BY incl_total DESC, name`), runID)
	if err != nil {
		return nil, fmt.Errorf("reading traced-call statistics: %w", err)
	}
	defer rows.Close()
	var out []Traced
	for rows.Next() {
		var t Traced
		var sample sql.NullInt64
		var in, ex [5]sql.NullFloat64
		if err := rows.Scan(&t.Name, &t.Object, &t.Calls, &t.Estimated, &t.InclTotal, &t.InclMean, &t.InclP50, &t.InclP99, &t.InclMax, &t.ExclTotal, &t.ExclMean,
			&sample, &in[0], &in[1], &in[2], &in[3], &ex[0], &ex[1], &ex[2], &ex[3], &ex[4]); err != nil {
			return nil, err
		}
		t.Sample = sample.Int64
		in[4] = sql.NullFloat64{Float64: float64(t.InclMax), Valid: in[0].Valid}
		t.InclSpread, t.ExclSpread = spreadOf(in), spreadOf(ex)
		out = append(out, t)
	}
	return out, rows.Err()
}

// Remove deletes runs (their statistics with them). Recordings no other run
// uses stay until GC.
func (s *Store) Remove(ids []int64) (int, error) {
	tx, err := s.db.Begin()
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	n := 0
	for _, id := range ids {
		// Statistics first: SQLite enforces ON DELETE CASCADE only with
		// foreign keys on, which a connection may not have.
		if _, err := tx.Exec(s.q(`DELETE FROM functions WHERE run_id = ?`), id); err != nil {
			return 0, err
		}
		if _, err := tx.Exec(s.q(`DELETE FROM traced WHERE run_id = ?`), id); err != nil {
			return 0, err
		}
		res, err := tx.Exec(s.q(`DELETE FROM runs WHERE id = ?`), id)
		if err != nil {
			return 0, err
		}
		k, _ := res.RowsAffected()
		n += int(k)
	}
	return n, tx.Commit()
}

// gcGrace is how old an unreferenced recording file must be before GC
// removes it: a writer stores the file before the row that names it.
const gcGrace = 10 * time.Minute

// GC removes the recordings no run refers to and returns how many and
// their bytes.
func (s *Store) GC() (int, int64, error) {
	used := map[string]bool{}
	rows, err := s.db.Query(`SELECT DISTINCT recording FROM runs`)
	if err != nil {
		return 0, 0, err
	}
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			rows.Close()
			return 0, 0, err
		}
		used[h] = true
	}
	rows.Close()
	if s.postgres {
		// A run and its blob are written in one transaction: no grace.
		var n, b int64
		err := s.db.QueryRow(`WITH d AS (DELETE FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.recording = b.hash) RETURNING octet_length(b.data) AS n)
SELECT count(*), COALESCE(sum(n), 0) FROM d`).Scan(&n, &b)
		if err != nil {
			return 0, 0, err
		}
		return int(n), b, nil
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, "recordings"))
	if err != nil {
		return 0, 0, err
	}
	var n int
	var bytes int64
	for _, e := range ents {
		name := e.Name()
		hash, ok := strings.CutSuffix(name, ".rec")
		if !ok || used[hash] {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < gcGrace {
			continue
		}
		if err := os.Remove(filepath.Join(s.dir, "recordings", name)); err == nil {
			n++
			bytes += info.Size()
		}
	}
	return n, bytes, nil
}

// RecordingPath returns a file holding the recording with the given hash:
// the stored file for SQLite, a copy in the user's cache for PostgreSQL.
func (s *Store) RecordingPath(hash string) (string, error) {
	if !s.postgres {
		p := s.blobPath(hash)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("the recording %s is missing from %s: %w", hash[:12], filepath.Join(s.dir, "recordings"), err)
		}
		return p, nil
	}
	p := filepath.Join(s.cache, hash+".rec")
	if h, _, err := hashFile(p); err == nil && h == hash {
		return p, nil
	}
	var data []byte
	if err := s.db.QueryRow(`SELECT data FROM blobs WHERE hash = $1`, hash).Scan(&data); err != nil {
		return "", fmt.Errorf("reading the recording %s from the store: %w", hash[:12], err)
	}
	if err := userfile.MkdirAll(s.cache); err != nil {
		return "", err
	}
	if err := copyFile(p, bytes.NewReader(data)); err != nil {
		return "", fmt.Errorf("copying the recording %s into %s: %w", hash[:12], s.cache, err)
	}
	return p, nil
}
