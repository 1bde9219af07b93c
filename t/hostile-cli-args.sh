#!/bin/sh
# hostile-cli-args.sh - a table of hostile command lines.  Each gets its
# documented exit status and a message naming the argument at fault, and
# every file that existed before is byte-identical after (the directory is
# checksummed before and after each line).
. "${srcdir:-.}/t/lib.sh"
need_shardpipe
scratch hostile-args

cd "$tmp" || exit 1
printf '0123456789abcdef' > in16
"$SP" write --shape 16 --chunk 4 --shard 2 --dtype uint8 --input in16 st \
	> /dev/null || bail_out "shardpipe write cannot write the first store"
mkdir -p proj/c/src && echo keep > proj/c/src/main.c
echo "not a store" > afile
ln -s st lnk
mkdir ro && echo keep > ro/x
chmod 555 ro
mkdir out

# sums: every path under ., its type and content checksum, sorted.
sums() {
	find . -path ./out -prune -o -print | LC_ALL=C sort | while IFS= read -r p; do
		if [ -L "$p" ]; then printf 'L %s %s\n' "$p" "$(readlink "$p")"
		elif [ -f "$p" ]; then printf 'F %s %s\n' "$p" "$(cksum < "$p")"
		else printf 'D %s\n' "$p"; fi
	done
}

W="write --dtype uint8 --input in16"
# EXIT|NEEDLE|ARGS (ARGS word-split by eval, so quotes work)
cat > out/table <<'TABLE'
2|--shape|write --dtype uint8 --input in16 --shape '' --chunk 4 new
2|+3|write --dtype uint8 --input in16 --shape +3 --chunk 1 new
2| 3|write --dtype uint8 --input in16 --shape ' 3' --chunk 1 new
2|-3|write --dtype uint8 --input in16 --shape -3 --chunk 1 new
2|--chunk|write --dtype uint8 --input in16 --shape 16 --chunk '' new
2|-2|write --dtype uint8 --input in16 --shape 16 --chunk -2 new
2|--shard|write --dtype uint8 --input in16 --shape 16 --chunk 4 --shard -1 new
2|--shard|write --dtype uint8 --input in16 --shape 16 --chunk 4 --shard '' new
2|overflow|write --dtype uint8 --input in16 --shape 4294967296,4294967296,4294967296 --chunk 1,1,1 new
2|overflow|write --dtype uint16 --input in16 --shape 18446744073709551615 --chunk 18446744073709551615 new
2|18446744073709551616|write --dtype uint8 --input in16 --shape 18446744073709551616 --chunk 1 new
2|--dtype|write --dtype uint9 --input in16 --shape 16 --chunk 4 new
2|st|write --dtype uint8 --input in16 --shape 16 --chunk 4 st
2|proj|write --dtype uint8 --input in16 --shape 16 --chunk 4 --overwrite proj
2|afile|write --dtype uint8 --input in16 --shape 16 --chunk 4 --overwrite afile
2|lnk|write --dtype uint8 --input in16 --shape 16 --chunk 4 --overwrite lnk
2|missing|write --dtype uint8 --input in16 --shape 16 --chunk 4 missing/new
1|/proc/self|write --dtype uint8 --input in16 --shape 16 --chunk 4 /proc/self/new
2|/proc/version|write --dtype uint8 --input in16 --shape 16 --chunk 4 --overwrite /proc/version
2|proj|demo --frames 1 proj
2|st|cat st st
2|st|verify st st
2|-o|cat -o out/a -o out/b st
2|--against|verify st --against in16 --against afile
2|--bogus|cat --bogus st
2|--bogus|verify --bogus st
1|nostore|cat nostore
1|proj|cat proj
1|afile|verify afile
1|/proc|verify /proc
3|afile|verify st --against afile
1|nofile|verify st --against nofile
2|--frobnicate|--frobnicate
2|--shape given twice|write --dtype uint8 --input in16 --shape 16 --shape 8 --chunk 4 new
2|--threads|write --dtype uint8 --input in16 --shape 16 --chunk 4 --threads ' 3' new
2|--threads|write --dtype uint8 --input in16 --shape 16 --chunk 4 --threads +3 new
2|--threads|write --dtype uint8 --input in16 --shape 16 --chunk 4 --threads '' new
2|--threads|write --dtype uint8 --input in16 --shape 16 --chunk 4 --threads -1 new
2|--threads|write --dtype uint8 --input in16 --shape 16 --chunk 4 --threads 5000 new
2|--threads|write --dtype uint8 --input in16 --shape 16 --chunk 4 --threads 18446744073709551616 new
2|--threads given twice|write --dtype uint8 --input in16 --shape 16 --chunk 4 --threads 3 --threads 2 new
2|--chunk|write --dtype uint8 --input in16 --shape 16 --chunk '4 ' new
2|--shape|write --dtype uint8 --input in16 --shape 1e3 --chunk 4 new
2|--shape|write --dtype uint8 --input in16 --shape 0x10 --chunk 4 new
2|--shape|write --dtype uint8 --input in16 --shape 16,,4 --chunk 4,1,4 new
2|--chunks-per-shard|write --dtype uint8 --input in16 --shape 16 --chunk 4 --chunks-per-shard '+2' new
2|--shard-shape given twice|write --dtype uint8 --input in16 --shape 16 --chunk 4 --shard-shape 8 --shard-shape 8 new
2|--overwrite given twice|write --dtype uint8 --input in16 --shape 16 --chunk 4 --overwrite --overwrite new
2|--quiet given twice|write --dtype uint8 --input in16 --shape 16 --chunk 4 --quiet --quiet new
2|--input given twice|write --dtype uint8 --input in16 --input in16 --shape 16 --chunk 4 new
2|--input|write --shape 16 --chunk 4 new --input
2|--input|write --shape 16 --chunk 4 --input --quiet new
2|--dtype given twice|write --dtype uint8 --dtype uint16 --input in16 --shape 16 --chunk 4 new
2|--fill-value|write --dtype uint8 --input in16 --shape 16 --chunk 4 --fill-value ' 3' new
2|--fill-value|write --dtype uint8 --input in16 --shape 16 --chunk 4 --fill-value +3 new
2|--fill-value|write --dtype float32 --input in16 --shape 4 --chunk 4 --fill-value 0x1p3 new
2|--fill-value|write --dtype float32 --input in16 --shape 4 --chunk 4 --fill-value 0x7fc0 new
2|--fill-value|write --dtype float32 --input in16 --shape 4 --chunk 4 --fill-value 'nan(1)' new
2|--fill-value given twice|write --dtype uint8 --input in16 --shape 16 --chunk 4 --fill-value 3 --fill-value 4 new
2|--codec|write --dtype uint8 --input in16 --shape 16 --chunk 4 --codec 'zstd: 3' new
2|--codec given twice|write --dtype uint8 --input in16 --shape 16 --chunk 4 --codec zstd:1 --codec gzip new
2|new2|write --dtype uint8 --input in16 --shape 16 --chunk 4 new new2
2|--frames|demo --frames ' 1' new
2|--frames|demo --frames 0 new
2|--frames given twice|demo --frames 1 --frames 2 new
2|--threads|demo --frames 1 --threads -1 new
2|--overwrite given twice|demo --frames 1 --overwrite --overwrite new
2|new2|demo --frames 1 new new2
2|--rows|bench --rows ' 5'
2|--rows given twice|bench --rows 5 --rows 6
2|--span|bench --span +4
2|--repeat|bench --repeat 0
2|--repeat|bench --repeat 101
2|--json given twice|bench --json --json
2|--output given twice|bench --output new --output new2
2|stack|bench cube stack
2|a workload cannot go with it|bench --all cube
2|--fill cannot go with it|bench --all --fill zeros
2|--shape cannot go with it|bench --all --shape 4,4 --chunk 2,2
2|--output cannot go with it|bench --all --output new
2|--levels cannot go with it|bench --all --levels 2
2|--downsample cannot go with it|bench --all --downsample y,x
2|--rows and --size|bench --rows 4 --size 100
2|--size 0|bench --size 0
2|"rows" is not a byte count, row or epoch|bench --span rows
2|977343669135 rows (--frames) of the shape's dims after the first do not fit|bench frames --fill noise12 --frames 977343669135 --rows 2
2|4 rows (--frames) of the shape's dims after the first do not fit|bench --shape 4,4294967296,4294967296 --chunk 1,1,1 --rows 1 --dtype uint8
2|--rows|conform --rows -1
2|--rows|conform --rows 1x
2|--seed given twice|conform --seed 1 --seed 2
2|--keep given twice|conform --keep a --keep b
2|--backends|conform --backends
2|-o|cat st -o st/zarr.json
2|-o|cat st -o st/c/new
2|--against|verify st --against
2|x|backends x
2|/dev/null is not a directory|write --dtype uint8 --input in16 --shape 16 --chunk 4 /dev/null/new
2|in16 is not a directory|write --dtype uint8 --input in16 --shape 16 --chunk 4 in16/new
2|--input proj is a directory|write --dtype uint8 --input proj --shape 16 --chunk 4 new
2|--durable needs --output|bench --durable --shape 4,4 --chunk 2,2
2|more than 2^64 bytes|conform --shape 0,4294967296,4294967296 --chunk 1,1,1
2|dim 1: size 0|conform --shape 0,0 --chunk 1,1 --input in16
2|do not fit in memory|conform --rows 18446744073709551615
2|no backend could write|conform --shape 0,4 --chunk 2,2 --codec zstd:99
TABLE
if [ "$(id -u)" != 0 ]; then
	echo '1|ro|write --dtype uint8 --input in16 --shape 16 --chunk 4 ro/new' >> out/table
	echo '1|/proc|write --dtype uint8 --input in16 --shape 16 --chunk 4 /proc/shardpipe-new' >> out/table
else
	# Root may write /proc, whose file system then refuses the mkdir.
	echo '2|/proc: No such file or directory (that file system makes no new directories|write --dtype uint8 --input in16 --shape 16 --chunk 4 /proc/shardpipe-new' >> out/table
fi
plan $(($(wc -l < out/table) * 3 + 5))
while IFS='|' read -r want needle args; do
	sums > out/before
	eval "set -- $args"
	timeout 60 "$SP" "$@" > out/stdout 2> out/err
	st=$?
	is "$st" "$want" "$args: exit status"
	if grep -qF -- "$needle" out/err; then
		ok 0 "$args: message names $needle"
	else
		ok 1 "$args: message names $needle"
		diag "$(cat out/err)"
	fi
	sums > out/after
	if cmp -s out/before out/after; then
		ok 0 "$args: every earlier file unchanged"
	else
		ok 1 "$args: every earlier file unchanged"
		diff out/before out/after | while IFS= read -r l; do diag "$l"; done
	fi
	rm -rf new out/a out/b
done < out/table
chmod 755 ro

# An endless input past a bounded shape: the first 16 bytes are written,
# the rest is refused without reading /dev/zero to its (absent) end.
timeout 60 "$SP" write --shape 16 --chunk 4 --shard 4 --input /dev/zero zero \
	> /dev/null 2> out/err
is $? 2 "an endless input longer than a bounded shape exits 2, not a hang"
grep -q "holds at least [0-9]* bytes more than the 16 bytes" out/err
ok $? "and says at least how much more"

# --overwrite of a real store removes only what the store owns: a foreign
# file inside c/ survives, and the new data reads back.
echo keep > st/c/notes
printf 'fedcba9876543210' > in16b
"$SP" write --shape 16 --chunk 4 --shard 2 --dtype uint8 --input in16b \
	--overwrite st > /dev/null 2> out/err
is $? 0 "--overwrite of a store holding a foreign file in c/"
is "$(cat st/c/notes)" keep "the foreign file is untouched"
is "$("$SP" cat st)" fedcba9876543210 "the new data reads back"
done_testing
