package recording

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/iotest"
)

// unsetFields lists the fields (dotted paths) of the record types in recs
// that are zero in every record of their type: a round trip cannot tell
// whether such a field is written and read back.
func unsetFields(recs []Record) []string {
	set := map[string]bool{} // type.field → non-zero somewhere
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		if _, seen := set[path]; !seen {
			set[path] = false
		}
		if !v.IsZero() {
			set[path] = true
		}
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem(), path)
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i), path+"."+v.Type().Field(i).Name)
				}
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), path+"[]")
			}
		}
	}
	for _, r := range recs {
		walk(reflect.ValueOf(r).Elem(), fmt.Sprintf("%T", r))
	}
	var out []string
	for path, ok := range set {
		if !ok {
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out
}

func TestRoundTrip(t *testing.T) {
	if u := unsetFields(allRecords()); len(u) > 0 {
		t.Errorf("fields zero in every record of their type, which the round trip cannot check: %v", u)
	}
	for _, tc := range []struct {
		name string
		recs []Record
	}{{"full", allRecords()}, {"zero", zeroRecords()}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rt.rec")
			w, err := Create(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.recs {
				if err := w.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			samples := 0
			for _, r := range tc.recs {
				if r.Kind() == KindSample {
					samples++
				}
			}
			if w.Samples() != uint64(samples) {
				t.Errorf("Samples() = %d, want %d", w.Samples(), samples)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != w.Bytes() {
				t.Errorf("file size %v (%v), Bytes() = %d", fi.Size(), err, w.Bytes())
			}
			got, s := readAll(t, path)
			if !reflect.DeepEqual(got, tc.recs) {
				for i := range min(len(got), len(tc.recs)) {
					if !reflect.DeepEqual(got[i], tc.recs[i]) {
						t.Errorf("record %d: got %+v, want %+v", i, got[i], tc.recs[i])
					}
				}
				t.Fatalf("got %d records, want %d", len(got), len(tc.recs))
			}
			want := Salvage{Records: int64(len(tc.recs)), Bytes: w.Bytes(), End: true}
			if s != want {
				t.Errorf("Salvage() = %+v, want %+v", s, want)
			}
			if s.String() != "" {
				t.Errorf("intact file: Salvage().String() = %q", s.String())
			}
		})
	}
}

func TestReaderVersion(t *testing.T) {
	r, err := NewReader(bytes.NewReader(encodeRecords(t, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if ma, mi := r.Version(); ma != MajorVersion || mi != MinorVersion {
		t.Errorf("Version() = %d.%d", ma, mi)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next on a file without records: %v, want io.EOF", err)
	}
}

func TestWriteErrors(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(nil); err == nil {
		t.Error("Write(nil) succeeded")
	}
	if err := w.Write((*Sample)(nil)); err == nil {
		t.Error("Write of a nil *Sample succeeded")
	}
	if err := w.Write(&Stack{User: []uint64{1}}); err == nil {
		t.Error("Write of a Stack with ID 0 succeeded")
	}
	if err := w.Write(&Object{Data: make([]byte, MaxPayload)}); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("oversized record: %v", err)
	}
	// None of that wrote anything, and the writer still works.
	if err := w.Write(&Sample{Time: 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&Sample{}); err == nil {
		t.Error("Write after Close succeeded")
	}
	recs, _ := drain(t, mustReader(t, buf.Bytes()))
	if len(recs) != 1 {
		t.Errorf("got %d records, want 1", len(recs))
	}
	if _, err := Create(filepath.Join(t.TempDir(), "no", "such", "dir.rec")); err == nil {
		t.Error("Create in a missing directory succeeded")
	}
}

func mustReader(t testing.TB, data []byte) *Reader {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFieldCompatibility checks the minor-version rules: trailing bytes a
// reader does not know are ignored, missing trailing fields read as zero and
// unknown kinds are skipped.
func TestFieldCompatibility(t *testing.T) {
	var buf bytes.Buffer
	buf.Write(encodeRecords(t, nil))
	// A sample with two extra trailing fields.
	p := binary.AppendUvarint(nil, 100) // Time
	p = binary.AppendUvarint(p, 7)      // PID
	p = binary.AppendUvarint(p, 8)      // TID
	p = binary.AppendUvarint(p, 1)      // CPU
	p = binary.AppendUvarint(p, 1000)   // Period
	p = binary.AppendUvarint(p, 3)      // StackID
	p = binary.AppendUvarint(p, 1|8|16) // flags: Truncated and unknown bits
	p = binary.AppendUvarint(p, 3)      // Event: switch (format 1.1)
	p = binary.AppendUvarint(p, 12345)  // Arg (format 1.1)
	p = binary.AppendUvarint(p, 999)    // a field of a later minor version
	p = append(p, 1, 2, 3)              // and so on
	buf.Write(rawFrame(KindSample, p))
	// A record of a kind this version does not know.
	buf.Write(rawFrame(200, []byte("future")))
	// A sample with only Time and PID.
	buf.Write(rawFrame(KindSample, []byte{5, 6}))
	// An Mmap ending after its path.
	buf.Write(rawFrame(KindMmap, []byte{1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 'p', 0xff, 0xff}))

	recs, s := drain(t, mustReader(t, buf.Bytes()))
	want := []Record{
		&Sample{Time: 100, PID: 7, TID: 8, CPU: 1, Period: 1000, StackID: 3, Truncated: true, Event: EventSwitch, Arg: 12345},
		&Sample{Time: 5, PID: 6},
		&Mmap{Time: 1, PID: 2, TID: 3, Start: 4, Len: 5, Pgoff: 6, Prot: 7, Flags: 8, Path: "p"},
	}
	if !reflect.DeepEqual(recs, want) {
		t.Errorf("got %v, want %v", dump(recs), dump(want))
	}
	if s.Unknown != 1 || !s.Intact() {
		t.Errorf("Salvage() = %+v, want 1 unknown and intact", s)
	}
}

// rawFrame frames a payload.
func rawFrame(k Kind, payload []byte) []byte {
	b := append([]byte{byte(k)}, binary.AppendUvarint(nil, uint64(len(payload)))...)
	b = append(b, payload...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli()))
}

func dump(recs []Record) string {
	var s []string
	for _, r := range recs {
		s = append(s, fmt.Sprintf("%T%+v", r, r))
	}
	return strings.Join(s, "\n")
}

// TestMalformedPayload: a frame with a good CRC whose payload does not decode
// is skipped as damage.
func TestMalformedPayload(t *testing.T) {
	var buf bytes.Buffer
	buf.Write(encodeRecords(t, nil))
	buf.Write(rawFrame(KindSample, []byte{0x80, 0x80}))                      // cut varint
	buf.Write(rawFrame(KindMeta, []byte("{")))                               // bad JSON
	buf.Write(rawFrame(KindStack, []byte{1, 100, 0}))                        // count beyond the payload
	buf.Write(rawFrame(KindSample, []byte{1, 0xff, 0xff, 0xff, 0xff, 0x7f})) // PID > 2^32-1
	buf.Write(rawFrame(KindStack, []byte{0, 0, 1, 2}))                       // ID 0
	buf.Write(rawFrame(KindLost, []byte{1, 0x80, 0x02}))                     // reason 256
	buf.Write(rawFrame(KindEnd, []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x7f}))
	buf.Write(rawFrame(KindEnd, []byte{1}))
	recs, s := drain(t, mustReader(t, buf.Bytes()))
	if len(recs) != 1 || s.DamagedRegions != 7 || !s.End {
		t.Errorf("got %s, %+v", dump(recs), s)
	}
}

func TestStackDedup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dedup.rec")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	a := []uint64{0x401000, 0x401100, 0x402000}
	k := []uint64{0xffffffff81000000}
	type in struct{ kernel, user []uint64 }
	ins := []in{
		{nil, a},                      // new: 1
		{nil, a},                      // same
		{k, a},                        // new: 2
		{nil, nil},                    // no stack
		{a, nil},                      // new: 3 (kernel only differs from user only)
		{k, append([]uint64{}, a...)}, // same as 2, other slice
		{[]uint64{}, a},               // same as 1
	}
	for i, x := range ins {
		if err := w.WriteSample(Sample{Time: uint64(i), StackID: 99}, x.kernel, x.user); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Samples() != uint64(len(ins)) {
		t.Errorf("Samples() = %d", w.Samples())
	}
	recs, _ := readAll(t, path)
	var stackIDs, sampleIDs []uint64
	for _, r := range recs {
		switch r := r.(type) {
		case *Stack:
			stackIDs = append(stackIDs, r.ID)
		case *Sample:
			sampleIDs = append(sampleIDs, r.StackID)
		}
	}
	if want := []uint64{1, 2, 3}; !reflect.DeepEqual(stackIDs, want) {
		t.Errorf("stack IDs %v, want %v", stackIDs, want)
	}
	if want := []uint64{1, 1, 2, 0, 3, 2, 1}; !reflect.DeepEqual(sampleIDs, want) {
		t.Errorf("sample stack IDs %v, want %v", sampleIDs, want)
	}
	checkStacks(t, recs, ins[0].user)
}

// checkStacks checks that every sample refers to a stack defined before it
// and that no ID is defined twice.
func checkStacks(t *testing.T, recs []Record, _ []uint64) map[uint64]*Stack {
	t.Helper()
	stacks := map[uint64]*Stack{}
	var last uint64
	for _, r := range recs {
		switch r := r.(type) {
		case *Stack:
			if _, dup := stacks[r.ID]; dup {
				t.Errorf("stack ID %d defined twice", r.ID)
			}
			if r.ID <= last {
				t.Errorf("stack ID %d after %d", r.ID, last)
			}
			last = r.ID
			stacks[r.ID] = r
		case *Sample:
			if r.StackID != 0 && stacks[r.StackID] == nil {
				t.Errorf("sample refers to undefined stack %d", r.StackID)
			}
		}
	}
	return stacks
}

func TestStackTableClear(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clear.rec")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w.stackCap = 4
	var want [][]uint64 // the user stack of each sample
	for round := range 3 {
		for i := range 10 {
			u := []uint64{0x400000 + uint64(i)*16, 0x500000}
			want = append(want, u)
			if err := w.WriteSample(Sample{Time: uint64(round*10 + i)}, nil, u); err != nil {
				t.Fatal(err)
			}
			if len(w.stacks) > w.stackCap {
				t.Fatalf("table holds %d stacks, cap %d", len(w.stacks), w.stackCap)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, _ := readAll(t, path)
	stacks := checkStacks(t, recs, nil)
	if len(stacks) != 30 { // 10 distinct stacks cycling through a table of 4: never a hit
		t.Errorf("%d stacks written, want 30", len(stacks))
	}
	i := 0
	for _, r := range recs {
		if s, ok := r.(*Sample); ok {
			if got := stacks[s.StackID].User; !reflect.DeepEqual(got, want[i]) {
				t.Errorf("sample %d: stack %x, want %x", i, got, want[i])
			}
			i++
		}
	}

	// Repeating a stack right away hits even after a clear.
	var buf bytes.Buffer
	w, _ = NewWriter(&buf)
	w.stackCap = 2
	for _, u := range [][]uint64{{1}, {2}, {3}, {3}, {1}, {1}} {
		if err := w.WriteSample(Sample{}, nil, u); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	recs, _ = drain(t, mustReader(t, buf.Bytes()))
	var ids []uint64
	for _, r := range recs {
		if s, ok := r.(*Sample); ok {
			ids = append(ids, s.StackID)
		}
	}
	if want := []uint64{1, 2, 3, 3, 4, 4}; !reflect.DeepEqual(ids, want) {
		t.Errorf("stack IDs %v, want %v", ids, want)
	}
}

// smallFile is a multi-record recording of every kind.
func smallFile(t testing.TB) ([]byte, []Record) {
	recs := allRecords()
	recs = append(recs[:len(recs)-1:len(recs)-1], &Sample{Time: 9, PID: 1, TID: 2, StackID: 1}, &Sample{Time: 10}, recs[len(recs)-1])
	return encodeRecords(t, recs), recs
}

func TestTruncateEveryOffset(t *testing.T) {
	data, recs := smallFile(t)
	ends := frameEnds(t, data)
	for n := 0; n <= len(data); n++ {
		path := writeTemp(t, data[:n])
		r, err := Open(path)
		if n < HeaderSize {
			if err == nil {
				t.Fatalf("cut at %d: Open succeeded", n)
			}
			if errors.Is(err, ErrNotRecording) {
				t.Errorf("cut at %d: %v", n, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cut at %d: %v", n, err)
		}
		got, s := drain(t, r)
		r.Close()
		whole := 0
		for whole < len(ends) && ends[whole] <= n {
			whole++
		}
		if len(got) != whole || whole > 0 && !reflect.DeepEqual(got, recs[:whole]) {
			t.Fatalf("cut at %d: got %d records, want the first %d:\n%s", n, len(got), whole, dump(got))
		}
		atBoundary := n == HeaderSize || whole > 0 && ends[whole-1] == n
		if s.SkippedBytes != 0 || s.IncompleteTail == atBoundary || s.Bytes != int64(n)-s.TailBytes {
			t.Fatalf("cut at %d: Salvage() = %+v", n, s)
		}
		if !atBoundary && !strings.Contains(s.String(), "file ends mid-record") {
			t.Fatalf("cut at %d: Salvage().String() = %q", n, s.String())
		}
	}
}

// bigFile returns a recording of n realistic samples with deduplicated stacks.
func bigFile(t testing.TB, n int) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(&Meta{Tool: "culprit test", Event: "cpu-clock", Frequency: 99})
	g := newProfileGen(200)
	for range n {
		s, k, u := g.sample()
		if err := w.WriteSample(s, k, u); err != nil {
			t.Fatal(err)
		}
	}
	w.Write(&End{Samples: uint64(n)})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCorruptByte(t *testing.T) {
	data := bigFile(t, 500)
	recs, _ := drain(t, mustReader(t, data))
	ends := frameEnds(t, data)
	step := 1
	if testing.Short() {
		step = 7
	}
	for off := HeaderSize; off < len(data); off += step {
		bad := bytes.Clone(data)
		bad[off] ^= 1 << (off % 8)
		got, s := drain(t, mustReader(t, bad))
		// The damaged record is the one whose frame holds off.
		i := 0
		for ends[i] <= off {
			i++
		}
		start := HeaderSize
		if i > 0 {
			start = ends[i-1]
		}
		want := append(append([]Record{}, recs[:i]...), recs[i+1:]...)
		if len(got) != len(want) || !reflect.DeepEqual(got[max(i-1, 0):i+1], want[max(i-1, 0):i+1]) ||
			!reflect.DeepEqual(got[len(got)-1], want[len(want)-1]) {
			t.Fatalf("flip at %d (record %d, %T): got %d records, want %d", off, i, recs[i], len(got), len(want))
		}
		if i == len(recs)-1 {
			// Damage in the last record cannot be told from a record
			// still being written: part of it may be held as the tail.
			if s.SkippedBytes+s.TailBytes != int64(ends[i]-start) || s.DamagedRegions > 1 || s.End {
				t.Fatalf("flip at %d: Salvage() = %+v, want %d bytes skipped or in the tail", off, s, ends[i]-start)
			}
		} else if s.SkippedBytes != int64(ends[i]-start) || s.DamagedRegions != 1 || s.IncompleteTail || !s.End {
			t.Fatalf("flip at %d: Salvage() = %+v, want %d bytes skipped", off, s, ends[i]-start)
		}
		if off == len(data)/2 {
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("flip at %d: records differ", off)
			}
			t.Logf("flip at %d: %s", off, s)
		}
	}
}

func TestCorruptRegions(t *testing.T) {
	data := bigFile(t, 5000)
	recs, _ := drain(t, mustReader(t, data))
	ends := frameEnds(t, data)
	// Zero a page, overwrite another with garbage, and damage two lengths.
	bad := bytes.Clone(data)
	clear(bad[20000:24096])
	for i := 50000; i < 54096; i++ {
		bad[i] = byte(i * 7919 >> 3)
	}
	bad[ends[3000]+1] = 0xff // a length of 4+ bytes
	bad[ends[4000]+1] |= 0x40
	lost := map[int]bool{}
	for i := range recs {
		start := HeaderSize
		if i > 0 {
			start = ends[i-1]
		}
		if start < 24096 && ends[i] > 20000 || start < 54096 && ends[i] > 50000 || i == 3001 || i == 4001 {
			lost[i] = true
		}
	}
	var want []Record
	for i, r := range recs {
		if !lost[i] {
			want = append(want, r)
		}
	}
	got, s := drain(t, mustReader(t, bad))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	if s.DamagedRegions != 4 || !s.End || s.IncompleteTail {
		t.Errorf("Salvage() = %+v", s)
	}
	t.Log(s)
	if !strings.Contains(s.String(), "in 4 places") {
		t.Errorf("Salvage().String() = %q", s)
	}
}

// TestDamagedLengthAtEnd: a length damaged to point past the end of the file
// must not hide the records after it.
func TestDamagedLengthAtEnd(t *testing.T) {
	data, recs := smallFile(t)
	ends := frameEnds(t, data)
	bad := bytes.Clone(data)
	i := len(recs) - 3
	bad[ends[i-1]+1] = 0xff // 4-byte length, > the rest of the file
	bad[ends[i-1]+2] = 0xff
	bad[ends[i-1]+3] = 0xff
	bad[ends[i-1]+4] = 0x1f
	got, s := drain(t, mustReader(t, bad))
	want := append(append([]Record{}, recs[:i]...), recs[i+1:]...)
	if !reflect.DeepEqual(got, want) || s.DamagedRegions != 1 || s.IncompleteTail {
		t.Errorf("got %d records, want %d; %+v", len(got), len(want), s)
	}
}

func TestOpenErrors(t *testing.T) {
	hdr := func(major, minor uint16) []byte {
		b := []byte(Magic)
		b = binary.LittleEndian.AppendUint16(b, major)
		b = binary.LittleEndian.AppendUint16(b, minor)
		return binary.LittleEndian.AppendUint32(b, 0)
	}
	v2 := writeTemp(t, append(hdr(2, 0), rawFrame(KindSample, []byte{1})...))
	_, err := Open(v2)
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Major != 2 || ve.Minor != 0 {
		t.Fatalf("major 2: %v", err)
	}
	if want := "recording format 2.0 is newer than this culprit understands (1.x): upgrade culprit"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), v2) {
		t.Errorf("major 2: %q", err)
	}
	// A newer minor version is fine.
	r, err := Open(writeTemp(t, append(hdr(1, 7), rawFrame(KindSample, []byte{1})...)))
	if err != nil {
		t.Fatalf("minor 7: %v", err)
	}
	if recs, _ := drain(t, r); len(recs) != 1 {
		t.Errorf("minor 7: %d records", len(recs))
	}
	r.Close()

	for _, tc := range []struct {
		name, data, want string
		notRec           bool
	}{
		{"empty", "", "empty file", false},
		{"perf", "PERFILE2\x68\x00\x00\x00\x00\x00\x00\x00more perf data", "perf.data file", true},
		{"perf-swapped", "2ELIFREP\x00\x00\x00\x00\x00\x00\x00\x68", "perf.data file", true},
		{"garbage", "hello, world, this is text", "not a culprit recording", true},
		{"short-garbage", "xyz", "not a culprit recording", true},
		{"elf", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00", "not a culprit recording", true},
		{"cut-magic", "CULP", "truncated header", false},
		{"cut-header", Magic + "\x01\x00", "truncated header", false},
		{"major-0", string(hdr(0, 9)), "format 0.9 is not supported", false},
	} {
		path := writeTemp(t, []byte(tc.data))
		_, err := Open(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if errors.Is(err, ErrNotRecording) != tc.notRec {
			t.Errorf("%s: errors.Is(ErrNotRecording) = %v", tc.name, !tc.notRec)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.rec")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestConcurrentAppend reads a file while its writer is still appending.
func TestConcurrentAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.rec")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// The header is there at once.
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if recs, _ := drain(t, r); len(recs) != 0 {
		t.Fatalf("empty recording: %d records", len(recs))
	}
	var all []Record
	g := newProfileGen(20)
	write := func(n int) {
		for range n {
			s, k, u := g.sample()
			if err := w.WriteSample(s, k, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(100)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got, s := drain(t, r)
	if len(got) == 0 || s.IncompleteTail || !s.Intact() {
		t.Fatalf("after the first flush: %d records, %+v", len(got), s)
	}
	all = append(all, got...)
	// Enough records to make bufio write partial frames.
	for range 30 {
		write(500)
		got, s = drain(t, r)
		all = append(all, got...)
		if s.SkippedBytes != 0 {
			t.Fatalf("damage while appending: %+v", s)
		}
	}
	w.Write(&End{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, s = drain(t, r)
	all = append(all, got...)
	want, _ := readAll(t, path)
	if !reflect.DeepEqual(all, want) {
		t.Fatalf("read %d records while writing, %d after", len(all), len(want))
	}
	if !s.Intact() || !s.End || s.Bytes != w.Bytes() {
		t.Errorf("Salvage() = %+v, file %d bytes", s, w.Bytes())
	}

	// A frame written a byte at a time shows up once complete.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	frame := encodeRecords(t, []Record{&Comm{Name: "late"}})[HeaderSize:]
	for i, b := range frame {
		if rec, err := r.Next(); err != io.EOF {
			t.Fatalf("after %d of %d bytes: %v, %v", i, len(frame), rec, err)
		}
		if s := r.Salvage(); s.IncompleteTail != (i > 0) || s.TailBytes != int64(i) {
			t.Fatalf("after %d of %d bytes: %+v", i, len(frame), s)
		}
		f.Write([]byte{b})
	}
	if rec, err := r.Next(); err != nil || rec.(*Comm).Name != "late" {
		t.Fatalf("complete frame: %v, %v", rec, err)
	}
}

// TestChunkedSource: a source that returns one byte per Read gives the same
// records as one that returns everything, damaged or not.
func TestChunkedSource(t *testing.T) {
	data := bigFile(t, 300)
	bad := bytes.Clone(data)
	for i := 1000; i < len(bad); i += 1500 {
		bad[i] ^= 0x55
	}
	for _, d := range [][]byte{data, bad, bad[:len(bad)-3]} {
		want, ws := drain(t, mustReader(t, d))
		r, err := NewReader(iotest.OneByteReader(bytes.NewReader(d)))
		if err != nil {
			t.Fatal(err)
		}
		got, gs := drain(t, r)
		if !reflect.DeepEqual(got, want) || gs != ws {
			t.Errorf("one byte at a time: %d records %+v; at once: %d records %+v", len(got), gs, len(want), ws)
		}
	}
	// A read error is reported, not taken for the end.
	r, err := NewReader(io.MultiReader(bytes.NewReader(data[:1000]), iotest.ErrReader(errors.New("disk on fire"))))
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, err := r.Next()
		if err == io.EOF {
			t.Fatal("read error reported as io.EOF")
		}
		if err != nil {
			if !strings.Contains(err.Error(), "disk on fire") {
				t.Errorf("read error: %v", err)
			}
			break
		}
	}
}

func TestSalvageString(t *testing.T) {
	for _, tc := range []struct {
		s    Salvage
		want string
	}{
		{Salvage{Records: 5, End: true}, ""},
		{Salvage{Records: 5}, ""},
		{Salvage{Records: 1234, SkippedBytes: 57, DamagedRegions: 1, IncompleteTail: true},
			"salvaged 1234 records; skipped 57 damaged bytes in 1 place; file ends mid-record (recorder killed or still writing)"},
		{Salvage{Records: 1, SkippedBytes: 1, DamagedRegions: 2}, "salvaged 1 record; skipped 1 damaged byte in 2 places"},
		{Salvage{Records: 3, IncompleteTail: true, TailBytes: 5, End: true},
			"salvaged 3 records; ignored 5 bytes of an incomplete record after the end record"},
	} {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
}

// TestSize measures the encoding of realistic samples and stacks.
func TestSize(t *testing.T) {
	g := newProfileGen(1)
	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	const n = 10000
	for range n {
		s, _, _ := g.sample()
		s.StackID = 1000 + uint64(g.rng.IntN(3000))
		w.Write(&s)
	}
	w.Flush()
	perSample := float64(buf.Len()-HeaderSize) / n
	buf.Reset()
	w, _ = NewWriter(&buf)
	var frames int
	for i := range n {
		st := g.stack(10)
		frames += len(st[0]) + len(st[1])
		w.Write(&Stack{ID: 1000 + uint64(i), Kernel: st[0], User: st[1]})
	}
	w.Flush()
	perStack := float64(buf.Len()-HeaderSize) / n
	t.Logf("%.1f bytes per sample, %.1f bytes per stack of 10 user frames (%.1f frames with kernel ones; %.1f bytes per frame)",
		perSample, perStack, float64(frames)/n, perStack/(float64(frames)/n))
	if perSample > 26 {
		t.Errorf("%.1f bytes per sample", perSample)
	}
	if perStack > 60 {
		t.Errorf("%.1f bytes per stack", perStack)
	}
}

// TestReuseCalls reads calls (with and without arguments and strings)
// through one reused record, each checked as it is read, and keeps their
// arguments, which stay each call's own.
func TestReuseCalls(t *testing.T) {
	recs := []Record{
		&Call{Start: 20, End: 25, Child: 1, PID: 1, TID: 2, Probe: 1, Args: []uint64{7, 8}, Ret: 3, Strs: []string{"a", "bc"}},
		&Call{Start: 30, End: 31, PID: 1, TID: 3, Probe: 2, Caller: 1, Depth: 1, Site: 0x401004, Flags: CallUnreturned},
		&Call{Start: 40, End: 45, PID: 1, TID: 2, Probe: 1, Args: []uint64{9}, Off: 2, ChildOff: 1, Goroutine: 6},
	}
	r, err := NewReader(bytes.NewReader(encodeRecords(t, recs)))
	if err != nil {
		t.Fatal(err)
	}
	r.ReuseCalls()
	var first *Call
	var args [][]uint64
	for i, want := range recs {
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		got, ok := rec.(*Call)
		if !ok {
			t.Fatalf("record %d: got %T, want a Call", i, rec)
		}
		if first == nil {
			first = got
		} else if got != first {
			t.Errorf("record %d: a new Call record, want the reused one", i)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("record %d: got %+v, want %+v", i, got, want)
		}
		args = append(args, got.Args)
	}
	if len(args) != 3 || !slices.Equal(args[0], []uint64{7, 8}) || args[1] != nil || !slices.Equal(args[2], []uint64{9}) {
		t.Errorf("the calls' arguments as kept: %v, want each call's own", args)
	}
}

// TestReuse reads samples and stacks of varied lengths, each copied as it
// is read, through one reused record each, and checks them against what
// was written.
func TestReuse(t *testing.T) {
	recs := []Record{
		&Stack{ID: 1, Kernel: []uint64{0xffffffff81000010, 0xffffffff81000020}, User: []uint64{0x401000, 0x401100, 0x401200}},
		&Sample{Time: 10, PID: 1, TID: 2, StackID: 1, Period: 5},
		&Stack{ID: 2, User: []uint64{0x402000}},
		&Sample{Time: 11, PID: 1, TID: 3, StackID: 2, CPU: 1},
		&Stack{ID: 3, Kernel: []uint64{0xffffffff81000030}},
		&Stack{ID: 4, User: []uint64{0x403000, 0x403100, 0x403200, 0x403300, 0x403400, 0x403500}},
		&Sample{Time: 12, PID: 1, TID: 2, StackID: 4, Event: EventSwitch, Arg: 1},
	}
	r, err := NewReader(bytes.NewReader(encodeRecords(t, recs)))
	if err != nil {
		t.Fatal(err)
	}
	r.Reuse()
	var stack *Stack
	var sample *Sample
	for i, want := range recs {
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		switch got := rec.(type) {
		case *Stack:
			if stack != nil && got != stack {
				t.Errorf("record %d: a new Stack record, want the reused one", i)
			}
			stack = got
			w := want.(*Stack)
			if got.ID != w.ID || !slices.Equal(got.Kernel, w.Kernel) || !slices.Equal(got.User, w.User) {
				t.Errorf("record %d: got %+v, want %+v", i, got, w)
			}
		case *Sample:
			if sample != nil && got != sample {
				t.Errorf("record %d: a new Sample record, want the reused one", i)
			}
			sample = got
			if *got != *want.(*Sample) {
				t.Errorf("record %d: got %+v, want %+v", i, got, want)
			}
		default:
			t.Fatalf("record %d: got %T, want %T", i, rec, want)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the records: %v, want io.EOF", err)
	}
}
