/* Functions that differ only in their first instruction, the one a
 * uprobe replaces: x86-64 uprobes emulate some instructions (push, nop,
 * jumps) and single-step the others out of line, one more trap. */
.text
.globl f_nop5, f_push, f_test, f_endbr, f_mov, f_sub, f_cet, c_push
.type f_nop5,@function
/* uftrace -P takes an object any of whose functions begins with this
 * nop (as gcc -pg -mnop-mcount leaves it) for one built to be patched
 * at such nops, and then patches no other function of it; the build
 * bench/probecost.sh gives uftrace (-DNOP5_OTHER) writes the same nop
 * with another displacement, which uftrace patches as any code. */
#ifdef NOP5_OTHER
f_nop5: .byte 0x0f,0x1f,0x44,0x00,0x01
#else
f_nop5: .byte 0x0f,0x1f,0x44,0x00,0x00
#endif
 mov %rdi,%rax
 ret
.size f_nop5,.-f_nop5
.type f_push,@function
f_push: push %rbp
 mov %rsp,%rbp
 mov %rdi,%rax
 pop %rbp
 ret
.size f_push,.-f_push
.type f_test,@function
f_test: test %rdi,%rdi
 mov %rdi,%rax
 ret
.size f_test,.-f_test
.type f_endbr,@function
f_endbr: endbr64
 mov %rdi,%rax
 ret
.size f_endbr,.-f_endbr
.type f_mov,@function
f_mov: mov %rdi,%rax
 ret
.size f_mov,.-f_mov
.type f_sub,@function
f_sub: sub $8,%rsp
 mov %rdi,%rax
 add $8,%rsp
 ret
.size f_sub,.-f_sub
/* As -fcf-protection code begins: endbr64, then the prologue. bareprobe
 * probes the endbr64; culprit trace moves its probe to the push. */
.type f_cet,@function
f_cet: endbr64
 push %rbp
 mov %rsp,%rbp
 mov %rdi,%rax
 pop %rbp
 ret
.size f_cet,.-f_cet
/* f_push with a call in it: not a leaf, so in an object that unwinds
 * culprit trace puts its return probe on the RET (a leaf keeps its
 * uretprobe: no exception passes through it). */
.type c_push,@function
c_push: push %rbp
 mov %rsp,%rbp
 call f_mov
 pop %rbp
 ret
.size c_push,.-c_push
.section .note.GNU-stack,"",@progbits
