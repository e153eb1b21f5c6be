# libxml2.sh: sourced by the libxml2 cases of the bug corpus and by
# bench/check-libxml2.sh.
#
# libxml2_configure: in a libxml2 source tree, configures the build of a
# static xmllint (libxml2 linked in, so its functions are in the one binary),
# -O2 -g, without the optional libraries. Debian's patches may change a
# Makefile.am (~deb12u6 adds a test program; Debian's own build reruns
# autoreconf): maintainer mode off keeps make from regenerating Makefile.in
# with an automake the machine may not have; the shipped Makefile.in builds
# xmllint the same.
libxml2_configure() {
	CFLAGS="-O2 -g" ./configure --disable-maintainer-mode --disable-shared --enable-static \
		--without-python --without-zlib --without-lzma --without-icu \
		--without-readline --without-history --without-http --without-ftp
}

# libxml2_build OUTDIR PATCH builds xmllint from Debian's libxml2
# 2.9.14+dfsg-1.3~deb12u4 (or ~deb12u6, to which the patches apply too, where the mirror lists only that) with PATCH (the case's regression) applied, into
# OUTDIR; returns at once when OUTDIR already holds it.
libxml2_build() {
	out=$1
	if [ -x "$out/xmllint" ]; then
		return 0
	fi
	. "$(dirname "$2")/../debsrc.sh"
	mkdir -p "$out"
	debsrc_fetch libxml2 "2.9.14+dfsg-1.3~deb12u4|2.9.14+dfsg-1.3~deb12u6" "$out" "$2"
	(
		cd "$out/src"
		libxml2_configure
		make -j"$(nproc)" xmllint
	) >"$out/build.log" 2>&1 || {
		tail -n 30 "$out/build.log" >&2
		return 1
	}
	cp "$out/src/xmllint" "$out/xmllint"
}

# libxml2_lang_doc NESTS NAMESPACES writes the document of the xml:lang
# case: a DTD declaring xml:lang, NAMESPACES namespaces declared on the root,
# NESTS nests of elements 30 deep.
libxml2_lang_doc() {
	awk -v nests="$1" -v namespaces="$2" -v depth=30 'BEGIN {
		print "<?xml version=\"1.0\"?>"
		print "<!DOCTYPE doc ["
		print "<!ATTLIST item xml:lang CDATA #IMPLIED>"
		print "]>"
		printf "<doc"
		for (i = 0; i < namespaces; i++) printf " xmlns:n%d=\"urn:example:ns%d\"", i, i
		print ">"
		for (w = 0; w < nests; w++) {
			for (d = 0; d < depth; d++) printf "<item n=\"%d\">", d
			for (d = 0; d < depth; d++) printf "</item>"
			print ""
		}
		print "</doc>"
	}'
}
