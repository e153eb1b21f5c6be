#!/bin/sh
# check-libxml2.sh WORKDIR [CULPRIT]: culprit check on a real regression.
#
# A git repository of Debian's libxml2 2.9.14+dfsg-1.3~deb12u4 source with two
# commits: the source as configured (upstream's fix 688b41a0, "Fix quadratic
# behavior when looking up xml:* attributes", present), then that fix reverted
# (bench/bugs/libxml2-xml-lang/regression.patch). xmllint is built at each
# and run with culprit run three times at each of 10, 20 and 40 namespaces
# declared on the root of the bug corpus's document (--param namespaces=N);
# then culprit check and culprit models. docs/accuracy.md has the results.
set -eu
[ $# -ge 1 ] || { echo "usage: check-libxml2.sh WORKDIR [CULPRIT]" >&2; exit 2; }
work=$1
culprit=${2:-culprit}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/bugs/debsrc.sh"
. "$here/bugs/libxml2.sh"
mkdir -p "$work"
work=$(cd "$work" && pwd)
export CULPRIT_ARCHIVE="$work/archive"

if [ ! -d "$work/repo/.git" ]; then
	debsrc_ensure_src libxml2
	rm -rf "$work/dl" "$work/repo"
	mkdir -p "$work/dl"
	(cd "$work/dl" && apt-get source -qq libxml2=2.9.14+dfsg-1.3~deb12u4 >apt-source.log 2>&1)
	mv "$(find "$work/dl" -mindepth 1 -maxdepth 1 -type d | head -n 1)" "$work/repo"
	cd "$work/repo"
	git init -q
	git -c user.name=bench -c user.email=bench@localhost add -A
	git -c user.name=bench -c user.email=bench@localhost commit -qm "libxml2 2.9.14+dfsg-1.3~deb12u4 (Debian bookworm)"
	libxml2_configure >"$work/configure.log" 2>&1
	# configure rewrites files the tarball ships (xmlversion.h, ...): commit them.
	git -c user.name=bench -c user.email=bench@localhost commit -qam "configured"
	git apply "$here/bugs/libxml2-xml-lang/regression.patch"
	git -c user.name=bench -c user.email=bench@localhost commit -qam 'Revert "Fix quadratic behavior when looking up xml:* attributes" (688b41a0)'
fi
cd "$work/repo"

for ns in 10 20 40; do
	libxml2_lang_doc 8 "$ns" >"$work/doc$ns.xml"
done

branch=$(git symbolic-ref --short HEAD)
for rev in "$(git rev-parse HEAD~1)" "$(git rev-parse HEAD)"; do
	git checkout -q "$rev"
	make -j"$(nproc)" xmllint >"$work/make.log" 2>&1
	for rep in 1 2 3; do
		for ns in 10 20 40; do
			"$culprit" run --param namespaces="$ns" -- ./xmllint --repeat --xpath 'count(//item[lang("en")])' "$work/doc$ns.xml" >/dev/null
		done
	done
done
git checkout -q "$branch"
"$culprit" check || true
"$culprit" models --func '^(xmlStrEqual|xmlGetNsList|xmlGetPropNodeInternal)$'
