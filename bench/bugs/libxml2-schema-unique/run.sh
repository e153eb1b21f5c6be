#!/bin/sh
# run.sh OUTDIR MODE -- PREFIX...: xmllint validates a generated document of
# items against a schema in which the ids of the items of one group must be
# unique (xs:unique), 100 times (--repeat).
#   normal: 800 groups of 10 items (8,000 items)
#   buggy:  one group of 1,300 items
set -eu
[ $# -ge 2 ] || { echo "usage: run.sh OUTDIR normal|buggy -- PREFIX..." >&2; exit 2; }
out=$1 mode=$2
shift 2
[ "${1:-}" = "--" ] && shift
case $mode in
normal) groups=800 items=10 ;;
buggy) groups=1 items=1300 ;;
*) echo "run.sh: MODE must be normal or buggy" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/doc.xsd" <<'XSD'
<?xml version="1.0"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="doc">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="group" maxOccurs="unbounded">
          <xs:complexType>
            <xs:sequence>
              <xs:element name="item" maxOccurs="unbounded">
                <xs:complexType>
                  <xs:attribute name="id" type="xs:string" use="required"/>
                  <xs:attribute name="size" type="xs:integer"/>
                </xs:complexType>
              </xs:element>
            </xs:sequence>
          </xs:complexType>
          <xs:unique name="item-id">
            <xs:selector xpath="item"/>
            <xs:field xpath="@id"/>
          </xs:unique>
        </xs:element>
      </xs:sequence>
    </xs:complexType>
  </xs:element>
</xs:schema>
XSD
awk -v groups="$groups" -v items="$items" 'BEGIN {
	print "<?xml version=\"1.0\"?>"
	print "<doc>"
	for (g = 0; g < groups; g++) {
		print "<group>"
		for (i = 0; i < items; i++) printf "<item id=\"pkg-%d-%d\" size=\"%d\"/>\n", g, i, i * 7
		print "</group>"
	}
	print "</doc>"
}' >"$tmp/doc.xml"
"$@" "$out/xmllint" --repeat --noout --schema "$tmp/doc.xsd" "$tmp/doc.xml" 2>"$tmp/err" || {
	cat "$tmp/err" >&2
	exit 1
}
