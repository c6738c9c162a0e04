#!/bin/sh
# The file-to-file call graph of a set of objects, from their symbol
# tables (nm): an edge A -> B for every global symbol A uses and B defines.
# Calls through function pointers (observers, hooks) are not edges; that
# is how a lower layer reports upwards.
#
#   scripts/callgraph.sh [-l LAYERS] [-q] OBJECT|DIR...
#
# A DIR stands for its objects (DIR/.libs/*.o when libtool built them
# there, else DIR/*.o); libtool's "<target>_la-" prefix is dropped from
# each name.  Prints one line per edge, "A -> B: symbols".
#
# With -l, LAYERS declares the order, top first: one layer per line, its
# files' names (without .o) separated by blanks, an optional "label:"
# first, '#' comments.  The exit status is 1 when an edge goes up (from a
# lower layer to a higher one), when two files call each other (even in
# one layer), or when an object is in no layer; each is named on stderr.
# -q prints only those.
set -eu

layers=
quiet=0
while getopts l:q opt; do
	case $opt in
	l) layers=$OPTARG ;;
	q) quiet=1 ;;
	*) echo "usage: $0 [-l LAYERS] [-q] OBJECT|DIR..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-l LAYERS] [-q] OBJECT|DIR..." >&2; exit 2; }
[ -z "$layers" ] || [ -r "$layers" ] || { echo "$0: cannot read $layers" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
: > "$tmp/objs"
for a in "$@"; do
	if [ -d "$a" ]; then
		d=$a
		ls "$a"/.libs/*.o >/dev/null 2>&1 && d=$a/.libs
		ls "$d"/*.o >/dev/null 2>&1 ||
			{ echo "$0: no objects in $a" >&2; exit 2; }
		ls "$d"/*.o >> "$tmp/objs"
	elif [ -f "$a" ]; then
		echo "$a" >> "$tmp/objs"
	else
		echo "$0: no such object or directory: $a" >&2
		exit 2
	fi
done

# "NAME SYMBOL" lines: what each object defines, and what it uses.
: > "$tmp/def"
: > "$tmp/use"
while read -r o; do
	n=${o##*/}
	n=${n%.o}
	n=${n#*_la-}
	echo "$n" >> "$tmp/names"
	nm -P --defined-only "$o" |
		awk -v n="$n" '$2 ~ /^[TDBRGSVW]$/ { print n, $1 }' >> "$tmp/def"
	nm -P -u "$o" | awk -v n="$n" '{ print n, $1 }' >> "$tmp/use"
done < "$tmp/objs"

st=0
: > "$tmp/bad"
awk -v layers="$layers" -v quiet="$quiet" -v badf="$tmp/bad" '
FILENAME == ARGV[1] { def[$2] = $1; next }
FILENAME == ARGV[2] {
	if (($2 in def) && def[$2] != $1) {
		e = $1 " -> " def[$2]
		if (!(e in syms)) { edges[++ne] = e; from[e] = $1; to[e] = def[$2] }
		syms[e] = syms[e] " " $2
	}
	next
}
{ names[$1] = 1 }
END {
	bad = 0
	if (layers != "") {
		nl = 0
		while ((getline line < layers) > 0) {
			sub(/#.*/, "", line)
			k = split(line, f, /[ \t]+/)
			first = 1
			for (i = 1; i <= k; i++) {
				if (f[i] == "")
					continue
				if (first && f[i] ~ /:$/)
					continue	# a label
				if (first) { nl++; first = 0 }
				if (f[i] in level) {
					printf "callgraph: %s is in two layers\n", f[i] > badf
					bad = 1
				}
				level[f[i]] = nl
			}
		}
		for (n in names)
			if (!(n in level)) {
				printf "callgraph: %s is in no layer\n", n > badf
				bad = 1
			}
	}
	for (i = 1; i <= ne; i++) {
		e = edges[i]
		if (!quiet)
			printf "%s:%s\n", e, syms[e]
		a = from[e]; b = to[e]
		if ((b " -> " a) in syms && a < b) {
			printf "callgraph: two-way: %s <-> %s\n", a, b > badf
			bad = 1
		}
		if (layers != "" && (a in level) && (b in level) && level[a] > level[b]) {
			printf "callgraph: upward: %s:%s\n", e, syms[e] > badf
			bad = 1
		}
	}
	exit bad
}' "$tmp/def" "$tmp/use" "$tmp/names" > "$tmp/edges" || st=$?
sort "$tmp/edges"
sort "$tmp/bad" >&2
exit "${st:-0}"
