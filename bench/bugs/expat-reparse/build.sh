#!/bin/sh
# build.sh OUTDIR: xmlwf from Debian's expat 2.5.0-1+deb12u2 with the
# re-parse deferral of the CVE-2023-52425 fix taken out of callProcessor,
# the library compiled into the one binary (-O2 -g, the project's flags).
# The configuration header is the one CMake writes for Linux on x86-64:
# Debian's tree has neither a configure script nor CMake installed here.
set -eu
[ $# -eq 1 ] || { echo "usage: build.sh OUTDIR" >&2; exit 2; }
out=$1
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$out/xmlwf" ] && exit 0
. "$here/../debsrc.sh"
mkdir -p "$out"
debsrc_fetch expat 2.5.0-1+deb12u2 "$out" "$here/regression.patch"
cd "$out/src/expat"
cat >expat_config.h <<'H'
#ifndef EXPAT_CONFIG_H
#define EXPAT_CONFIG_H 1
#define BYTEORDER 1234
#define HAVE_DLFCN_H 1
#define HAVE_FCNTL_H 1
#define HAVE_GETPAGESIZE 1
#define HAVE_GETRANDOM 1
#define HAVE_INTTYPES_H 1
#define HAVE_MMAP 1
#define HAVE_STDINT_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRINGS_H 1
#define HAVE_STRING_H 1
#define HAVE_SYSCALL_GETRANDOM 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_UNISTD_H 1
#define PACKAGE "expat"
#define PACKAGE_NAME "expat"
#define PACKAGE_VERSION "2.5.0"
#define STDC_HEADERS 1
#define XML_CONTEXT_BYTES 1024
#define XML_DEV_URANDOM 1
#define XML_DTD 1
#define XML_NS 1
#endif
H
gcc -O2 -g -DHAVE_EXPAT_CONFIG_H -I. -Ilib -o "$out/xmlwf" \
	lib/xmlparse.c lib/xmlrole.c lib/xmltok.c \
	xmlwf/xmlwf.c xmlwf/xmlfile.c xmlwf/codepage.c xmlwf/unixfilemap.c
