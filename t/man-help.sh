#!/bin/sh
# man-help.sh - shardpipe(1) and the program's --help stay in step: every
# command `shardpipe --help` lists has a section in the man page; every
# option a command's --help prints is described in that section (or, for
# commands taking an array description, in "Array description options");
# and every option the man page describes for a command is in its --help.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe
man="${top_srcdir:-.}/doc/shardpipe.1"
[ -f "$man" ] || skip_all "doc/shardpipe.1 not found"

scratch manhelp

"$SP" --help > "$tmp/top" 2>&1 || { echo "Bail out! shardpipe --help fails"; exit 1; }
sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' "$tmp/top" > "$tmp/commands"
ncmd=$(wc -l < "$tmp/commands")
plan $((2 + 3 * ncmd))
[ "$ncmd" -ge 5 ]
ok $? "shardpipe --help lists $ncmd commands"

# The man page with roff's \- turned into -, and font escapes dropped.
sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$man" > "$tmp/man"

# section TITLE-PREFIX: the lines of the .SS section whose title starts so.
section() {
	awk -v want="$1" '
		/^\.S[SH] / {
			t = $0; sub(/^\.S[SH] "?/, "", t)
			on = index(t, want) == 1; next }
		on' "$tmp/man"
}
# opts: the long options (and -o) in a text, one per line.
opts() {
	grep -o -e '--[a-z][a-z0-9-]*' -e '[[:space:][]-[a-zA-Z]\b' |
		sed 's/^[[:space:][]//' | sort -u
}
# documented: the options a man section describes (.TP tags).
documented() {
	awk '/^\.TP/ { getline; print }' | opts
}

section "Array description options" > "$tmp/desc-sec"
documented < "$tmp/desc-sec" > "$tmp/desc-doc"
"$SP" write --help > "$tmp/write-help" 2>&1
opts < "$tmp/write-help" > "$tmp/write-opts"
comm -23 "$tmp/desc-doc" "$tmp/write-opts" > "$tmp/extra"
ok_empty "$tmp/extra" \
	"every description option in the man page is in write --help" \
	"not in write --help:"

while read -r cmd; do
	section "shardpipe $cmd" > "$tmp/sec"
	[ -s "$tmp/sec" ]
	ok $? "shardpipe(1) has a section for $cmd"
	if ! "$SP" "$cmd" --help > "$tmp/help" 2>&1; then
		# A --help that fails is a fault, not a reason to skip.
		ok 1 "$cmd --help exits 0"
		diag "$(head -3 "$tmp/help")"
		ok 1 "$cmd --help exits 0 (so its options cannot be compared)"
		continue
	fi
	opts < "$tmp/help" > "$tmp/help-opts"
	# Options described for the command: its section, and the array
	# description options where its --help offers them.
	cp "$tmp/sec" "$tmp/allowed-text"
	if grep -q -e '--shape' -e 'description options' "$tmp/help"; then
		cat "$tmp/desc-sec" >> "$tmp/allowed-text"
		cat "$tmp/desc-doc" >> "$tmp/help-opts"
		sort -u -o "$tmp/help-opts" "$tmp/help-opts"
	fi
	opts < "$tmp/allowed-text" > "$tmp/man-opts"
	# --help itself is described once, under OPTIONS.
	grep -v -x -e '--help' "$tmp/help-opts" |
		comm -23 - "$tmp/man-opts" > "$tmp/missing"
	ok_empty "$tmp/missing" \
		"every option of $cmd --help is in shardpipe(1)" \
		"not in the man page:"
	documented < "$tmp/sec" | comm -23 - "$tmp/help-opts" > "$tmp/extra"
	ok_empty "$tmp/extra" \
		"every option shardpipe(1) describes for $cmd is in its --help" \
		"not in --help:"
done < "$tmp/commands"
done_testing
