#!/bin/sh
# design-cites.sh - citations of the design document cannot rot.  Comments
# cite doc/design.md by section number ("doc/design.md §7.2", optionally
# followed by the section's title in double quotes).  Checked:
#   1. doc/design.md numbers its sections uniquely;
#   2. every section number on a line of the tree that names design.md
#      exists, and a quoted title after it is that section's title;
#   3. every section the document cites itself (§N in its own text) exists;
#   4. outside Markdown, a comment line that names doc/design.md carries
#      the section on the same line (a number alone on the next line would
#      escape check 2);
#   5. nothing cites the design notes that lived outside the repository
#      (DESIGN.md, spec/sharding-layer.md).
. "${top_srcdir:-.}/t/lib.sh"
src=${top_srcdir:-.}
doc=$src/doc/design.md
[ -f "$doc" ] || skip_all "doc/design.md not in the tree"
plan 5
scratch design

# Section headings: "## §4 Title" or "### §4.1 Title".
awk '/^#+ §[0-9]/ { n = $2; sub(/^§/, "", n); t = $0
	sub(/^#+ §[0-9.]+ /, "", t); print n "\t" t }' "$doc" > "$tmp/sections"
sort "$tmp/sections" | awk -F '\t' 'seen[$1]++ { print "§" $1 " twice" }' \
	> "$tmp/dups"
ok_empty "$tmp/dups" "doc/design.md numbers each section once"

# Lines of the tree naming design.md, as FILE:LINE:TEXT (this script
# excepted: its comments show the form, not citations).
( cd "$src" && grep -rnI 'design\.md' \
	README.md Makefile.am configure.ac include src backends bench t fuzz \
	scripts doc 2>/dev/null ) |
	grep -v '^t/design-cites\.sh:' | grep -v '^doc/design\.md:' \
	> "$tmp/lines"

# check_cites: for each "§N" on each input line (FILE:LINE:TEXT), the
# section must exist and a quoted title after it must match.
check_cites() {
	awk -v sections="$tmp/sections" '
	BEGIN { FS = "\t"
		while ((getline l < sections) > 0) {
			split(l, f, "\t"); title[f[1]] = f[2] } }
	{ where = $0; sub(/:[^:]*$/, "", where)
	  text = $0; sub(/^[^:]*:[^:]*:/, "", text)
	  while (match(text, /§[0-9]+(\.[0-9]+)*/)) {
		n = substr(text, RSTART, RLENGTH); sub(/^§/, "", n)
		text = substr(text, RSTART + RLENGTH)
		if (!(n in title)) { print where ": §" n " is no section"; continue }
		if (match(text, /^ "[^"]*"/)) {
			q = substr(text, 3, RLENGTH - 3)
			if (q != title[n])
				print where ": §" n " is \"" title[n] "\", not \"" q "\""
		}
	  } }'
}
check_cites < "$tmp/lines" > "$tmp/bad"
ok_empty "$tmp/bad" "every section cited in the tree exists, titles as quoted"

grep -n '§' "$doc" | grep -v '^[0-9]*:#' | sed 's|^|doc/design.md:|' |
	check_cites > "$tmp/self"
ok_empty "$tmp/self" "every section doc/design.md cites itself exists"

grep -v '^[^:]*\.md:' "$tmp/lines" | grep '\(#\|\*\|//\).*doc/design\.md' |
	grep -v 'doc/design\.md[^§]*§' > "$tmp/split"
ok_empty "$tmp/split" "a citation outside Markdown names its section on its line"

( cd "$src" && grep -rnI 'DESIGN\.md\|spec/sharding-layer\.md' \
	README.md Makefile.am configure.ac include src backends bench t fuzz \
	scripts doc 2>/dev/null ) | grep -v '^t/design-cites\.sh:' \
	> "$tmp/old"
ok_empty "$tmp/old" "nothing cites the design notes outside the repository"
done_testing
