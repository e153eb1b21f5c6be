package tracer

import "testing"

func TestEntrySite(t *testing.T) {
	endbr := func(b ...byte) []byte { return append([]byte{0xf3, 0x0f, 0x1e, 0xfa}, b...) }
	cases := []struct {
		name string
		code []byte
		want uint64
	}{
		{"push first", []byte{0x55, 0x48, 0x89, 0xe5, 0xc3}, 0},
		{"endbr64, push", endbr(0x55, 0xc3), 4},
		{"test, jle", []byte{0x48, 0x85, 0xff, 0x7e, 0x02, 0x31, 0xc0, 0xc3}, 3},
		{"endbr64, xor eax, push r12", endbr(0x31, 0xc0, 0x41, 0x54, 0xc3), 6},
		// mov %rdi,%rsi writes an argument register: --args would read it changed.
		{"mov to an argument register", []byte{0x48, 0x89, 0xfe, 0x55, 0xc3}, 0},
		// sub $8,%rsp moves the return address.
		{"stack pointer", []byte{0x48, 0x83, 0xec, 0x08, 0x55, 0xc3}, 0},
		// a store: mov %rdi,(%rax)
		{"store", []byte{0x48, 0x89, 0x38, 0x55, 0xc3}, 0},
		// test; jne back to the jne itself (a loop head on the site).
		{"loop to the site", []byte{0x48, 0x85, 0xff, 0x75, 0xfe, 0xc3}, 0},
		{"single-stepped only", []byte{0x48, 0x85, 0xff, 0x48, 0x89, 0xf8, 0xc3}, 0},
	}
	for _, c := range cases {
		if got := entrySite(c.code, 0x1000, nil, nil); got != c.want {
			t.Errorf("%s: site %d, want %d", c.name, got, c.want)
		}
	}
	// A cold part jumping back to the site: jmp rel32 from 0x2000 to 0x1004.
	back := []byte{0xe9, 0, 0, 0, 0}
	rel := int32(0x1004 - (0x2000 + 5))
	back[1], back[2], back[3], back[4] = byte(rel), byte(rel>>8), byte(rel>>16), byte(rel>>24)
	if got := entrySite(endbr(0x55, 0xc3), 0x1000, [][]byte{back}, []uint64{0x2000}); got != 0 {
		t.Errorf("a cold part jumps back to the site: site %d, want 0", got)
	}
}
