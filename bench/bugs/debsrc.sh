# debsrc.sh: helpers sourced by the build.sh of the Debian cases of the bug corpus.
#
# debsrc_fetch PKG VERSIONS DIR fetches the pinned Debian source package into DIR
# (apt-get source, Debian's own patches applied) and applies the case's
# regression.patch once. A deb-src entry for this machine's release is added
# when apt has none. Needs dpkg-dev (dpkg-source) and network access to the
# Debian mirror.

debsrc_ensure_src() {
	pkg=$1
	if apt-cache showsrc "$pkg" 2>/dev/null | grep -q '^Version:'; then
		return 0
	fi
	. /etc/os-release
	codename=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}
	cat >/etc/apt/sources.list.d/culprit-bugs-src.sources <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: $codename-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	apt-get update -qq
}

# debsrc_fetch PKG VERSIONS WORKDIR PATCH: leaves the patched tree in
# WORKDIR/src. VERSIONS is one version or several separated by '|', tried in
# order: a mirror's index keeps only the newest revisions of a release, so a
# case pins the revisions its patch is known to apply to.
debsrc_fetch() {
	pkg=$1 versions=$2 work=$3 patch=$4
	if [ -f "$work/src/.regression-applied" ]; then
		return 0
	fi
	debsrc_ensure_src "$pkg"
	rm -rf "$work/dl" "$work/src"
	mkdir -p "$work/dl"
	version=
	for v in $(echo "$versions" | tr '|' ' '); do
		if (cd "$work/dl" && apt-get source -qq "$pkg=$v" >apt-source.log 2>&1); then
			version=$v
			break
		fi
	done
	if [ -z "$version" ]; then
		cat "$work/dl/apt-source.log" >&2
		echo "debsrc: cannot fetch the source of $pkg at $versions (are these versions still in the Debian index? apt-cache showsrc $pkg)" >&2
		return 1
	fi
	tree=$(find "$work/dl" -mindepth 1 -maxdepth 1 -type d | head -n 1)
	[ -n "$tree" ] || { echo "debsrc: apt-get source left no tree in $work/dl" >&2; return 1; }
	mv "$tree" "$work/src"
	rm -rf "$work/dl"
	(cd "$work/src" && patch -p1 --forward --quiet <"$patch") || {
		echo "debsrc: $patch does not apply to $pkg=$version" >&2
		return 1
	}
	touch "$work/src/.regression-applied"
}
