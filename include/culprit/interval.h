/* culprit/interval.h: mark where a semantic interval (a request, a
 * transaction) starts and ends, for culprit variance.
 *
 *   #include <culprit/interval.h>
 *   CULPRIT_INTERVAL_START(req->id);   ... the work ...   CULPRIT_INTERVAL_END(req->id);
 *
 *   culprit variance --start usdt:culprit:interval_start \
 *       --end usdt:culprit:interval_end --key arg1 -- ./server
 *
 * Each mark is a USDT probe in SystemTap's format (the .note.stapsdt note
 * that <sys/sdt.h> writes, read by culprit, perf, bpftrace and gdb): a
 * single nop where it stands and a note naming it, with no library to
 * link and no semaphore. The id, any integer up to 64 bits, is passed in
 * %rdi (x86-64) or x0 (arm64) so that culprit's point probe reads it as
 * arg1: an END pairs with the START of the same id on any thread. Costs a
 * register move and a nop while not traced.
 */
#ifndef CULPRIT_INTERVAL_H
#define CULPRIT_INTERVAL_H

#if defined(__x86_64__)
#define _CULPRIT_ARG_REGNAME "rdi"
#elif defined(__aarch64__)
#define _CULPRIT_ARG_REGNAME "x0"
#else
#error "culprit/interval.h supports x86-64 and arm64"
#endif

#define _CULPRIT_MARK(name, id) \
	do {                                                                                               \
		register unsigned long long _culprit_id __asm__(_CULPRIT_ARG_REGNAME) = (unsigned long long)(id);\
		__asm__ __volatile__("990: nop\n"                                                          \
				     ".pushsection .note.stapsdt,\"?\",\"note\"\n"                         \
				     ".balign 4\n"                                                         \
				     ".4byte 992f-991f, 994f-993f, 3\n"                                    \
				     "991: .asciz \"stapsdt\"\n"                                           \
				     "992: .balign 4\n"                                                    \
				     "993: .8byte 990b\n"                                                  \
				     ".8byte _.stapsdt.base\n"                                             \
				     ".8byte 0\n"                                                          \
				     ".asciz \"culprit\"\n"                                                \
				     ".asciz \"" #name "\"\n"                                              \
				     ".asciz \"8@%0\"\n"                                                   \
				     "994: .balign 4\n"                                                    \
				     ".popsection\n"                                                       \
				     ".ifndef _.stapsdt.base\n"                                            \
				     ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n"\
				     ".weak _.stapsdt.base\n"                                              \
				     ".hidden _.stapsdt.base\n"                                            \
				     "_.stapsdt.base: .space 1\n"                                          \
				     ".size _.stapsdt.base, 1\n"                                           \
				     ".popsection\n"                                                       \
				     ".endif\n"                                                            \
				     :                                                                     \
				     : "r"(_culprit_id));                                                  \
	} while (0)

#define CULPRIT_INTERVAL_START(id) _CULPRIT_MARK(interval_start, id)
#define CULPRIT_INTERVAL_END(id) _CULPRIT_MARK(interval_end, id)

#endif
