package tracer

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// stapsdtNote builds one .note.stapsdt note (4-byte padding) with the given
// name and descriptor sizes written in its header.
func stapsdtNote(nameSz, descSz uint32, prov, name, args string, pc, base, sem uint64) []byte {
	le := binary.LittleEndian
	desc := le.AppendUint64(nil, pc)
	desc = le.AppendUint64(desc, base)
	desc = le.AppendUint64(desc, sem)
	desc = append(desc, prov+"\x00"+name+"\x00"+args+"\x00"...)
	b := le.AppendUint32(nil, nameSz)
	b = le.AppendUint32(b, descSz)
	b = le.AppendUint32(b, 3)
	b = append(b, "stapsdt\x00"...)
	b = append(b, desc...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// A probe's site is read from its note, corrected for .stapsdt.base; a
// crafted note header (sizes that wrap around in 32 bits) ends the notes
// without a panic.
func TestStapsdtSites(t *testing.T) {
	good := stapsdtNote(8, 24+len32("app\x00tick\x00-4@%edi\x00"), "app", "tick", "-4@%edi", 0x1100, 0x2000, 0x4000)
	other := stapsdtNote(8, 24+len32("app\x00tock\x00\x00"), "app", "tock", "", 0x1200, 0x2000, 0)
	sites, names := stapsdtSites(append(append([]byte{}, good...), other...), 4, 0x3000, "app", "tick")
	if len(sites) != 1 || sites[0] != (usdtSite{0x2100, 0x5000, "-4@%edi"}) || len(names) != 2 {
		t.Fatalf("sites %+v, names %v", sites, names)
	}
	for _, sz := range [][2]uint32{{0xFFFFFFFE, 40}, {8, 0xFFFFFFFE}, {0xFFFFFFFF, 0xFFFFFFFF}, {8, 1 << 20}} {
		bad := stapsdtNote(sz[0], sz[1], "app", "tick", "", 0x1100, 0, 0)
		if sites, _ := stapsdtSites(append(bad, good...), 4, 0, "app", "tick"); len(sites) != 0 {
			t.Errorf("sizes %#x: %+v read past a malformed note", sz, sites)
		}
	}
}

func len32(s string) uint32 { return uint32(len(s)) }

// FuzzStapsdtSites: any section contents give sites read from inside them,
// or none; never a panic. The tracer reads the notes of every program a
// --usdt probe names.
func FuzzStapsdtSites(f *testing.F) {
	f.Add(stapsdtNote(8, 24+len32("app\x00tick\x00-4@%edi\x00"), "app", "tick", "-4@%edi", 0x1100, 0x2000, 0x4000), uint8(4))
	f.Add(stapsdtNote(0xFFFFFFFE, 40, "app", "tick", "", 0x1100, 0, 0), uint8(4))
	f.Add(stapsdtNote(8, 0xFFFFFFFE, "app", "tick", "", 0x1100, 0, 0), uint8(8))
	f.Fuzz(func(t *testing.T, b []byte, align uint8) {
		sites, names := stapsdtSites(b, uint64(align), 0, "app", "tick")
		for _, s := range sites {
			if s.args != "" && !bytes.Contains(b, []byte(s.args)) {
				t.Fatalf("arguments %q are not in the notes", s.args)
			}
		}
		if len(sites) > len(names) {
			t.Fatalf("%d sites of %d probes", len(sites), len(names))
		}
	})
}

// --usdt and --line take a LIB@ prefix, and --usdt a pair PROVIDER:BEGIN:END.
func TestParsePointSpecs(t *testing.T) {
	for s, want := range map[string]Pattern{
		"app:tick":                       {USDT: "app:tick"},
		"app:req_begin:req_end":          {USDT: "app:req_begin:req_end"},
		"libfoo.so.1@app:tick":           {Lib: "libfoo.so.1", USDT: "app:tick"},
		"/opt/lib/libfoo.so@app:a:b":     {Lib: "/opt/lib/libfoo.so", USDT: "app:a:b"},
		"libfoo@lib:step_begin:step_end": {Lib: "libfoo", USDT: "lib:step_begin:step_end"},
	} {
		if p, err := ParseUSDT(s); err != nil || p != want {
			t.Errorf("ParseUSDT(%q) = %+v, %v; want %+v", s, p, err, want)
		}
	}
	for _, s := range []string{"app", "app:", ":tick", "app:a:a", "app:a:b:c", "@app:tick", "libfoo@", "lib@app::b"} {
		if p, err := ParseUSDT(s); err == nil {
			t.Errorf("ParseUSDT(%q) = %+v, want an error", s, p)
		}
	}
	if p, err := ParseLine("libfoo.so@src/foo.c:12"); err != nil || p != (Pattern{Lib: "libfoo.so", Line: "src/foo.c:12"}) {
		t.Errorf("ParseLine with a library: %+v, %v", p, err)
	}
	for _, s := range []string{"foo.c", "foo.c:0", "@foo.c:3", "lib@foo.c"} {
		if p, err := ParseLine(s); err == nil {
			t.Errorf("ParseLine(%q) = %+v, want an error", s, p)
		}
	}
}
