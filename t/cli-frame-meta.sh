#!/bin/sh
# cli-frame-meta.sh - shardpipe write --frame-meta FILE.csv (design §28.9):
# an image written with a CSV of random per-frame values, every field read
# back by zarr-python equal to the CSV as Python's csv module reads it; a
# CSV shorter or longer than the input exits 2 with the frames that have
# values written; --append continues an image's fields (4 frames, then
# the 5 others with the rest of the CSV: the one run's files); every
# refusal exits with its status, names what is at fault and writes
# nothing.
. "${top_srcdir:-.}/t/lib.sh"
need_shardpipe

scratch cliframemeta
test_seed
plan 27

frames=9
random_bytes $((frames * 8 * 6 * 2)) "$tmp/f.raw"
perl -e 'srand($ARGV[0]); print "time:f64,z_um,n:i64,flag:bool\n";
	 for (1..$ARGV[1]) { printf "%.17g, %d,%d,%s\n", rand(1e6),
	 int(rand(200)) - 100, int(rand(2**40)) - 2**39,
	 rand(1) < 0.5 ? "true" : "0" }' "$seed" $frames > "$tmp/m.csv"
img() {
	out=$1
	shift
	"$SP" write --shape 0,8,6 --chunk 2,4,3 --shard-shape 4,8,6 \
		--dtype uint16 --names t,y,x --input "$tmp/f.raw" --quiet \
		"$@" "$out"
}

img "$tmp/a.zarr" --ngff --frame-meta "$tmp/m.csv" 2> "$tmp/err"
ok $? "write --ngff --frame-meta" || diag "$(cat "$tmp/err")"
if python_usable 11 zarr numpy; then
	"$PY" - "$tmp/a.zarr" "$tmp/m.csv" <<'PY'
import csv, sys
import numpy as np, zarr
g = zarr.open_group(sys.argv[1], mode="r")
rows = list(csv.reader(open(sys.argv[2]), skipinitialspace=True))
names = [h.split(":")[0] for h in rows[0]]
conv = {"time": float, "z_um": float, "n": int,
        "flag": lambda v: v in ("true", "1")}
for i, name in enumerate(names):
    want = [conv[name](r[i]) for r in rows[1:]]
    got = g[name][:].tolist()
    assert got == want, (name, got, want)
assert g["skipped"][:].tolist() == [False] * len(rows[1:])
assert g["0"].shape[0] == len(rows[1:])
PY
	ok $? "zarr-python reads every field equal to the CSV"
else
	skip 1 "$python_why"
fi

head -4 "$tmp/m.csv" > "$tmp/short.csv"
img "$tmp/s.zarr" --ngff --frame-meta "$tmp/short.csv" 2> "$tmp/err"
is $? 2 "a CSV of 3 frames for 9: exit 2"
grep -q 'holds values for 3 frames' "$tmp/err" &&
	grep -q '"shape": \[3\]' "$tmp/s.zarr/time/zarr.json" &&
	grep -q '"shape": \[3,' "$tmp/s.zarr/0/zarr.json"
ok $? "the 3 frames with values are written, image and fields"
{ cat "$tmp/m.csv"; echo "1,2,3,true"; } > "$tmp/long.csv"
img "$tmp/l.zarr" --ngff --frame-meta "$tmp/long.csv" 2> "$tmp/err"
is $? 2 "a CSV of 10 frames for 9: exit 2"
grep -q 'holds values for 10 frames, the input 9' "$tmp/err"
ok $? "the message counts both"

mkdir "$tmp/w"
watch=$tmp/w
watch_absent=$tmp/w/x.zarr
printf 'time:f32\n1\n' > "$tmp/bad-type.csv"
refused 2 'type "f32" is not f64, i64 or bool' "a type of no field" -- \
	img "$watch_absent" --ngff --frame-meta "$tmp/bad-type.csv"
printf 'n:i64\n1.5\n' > "$tmp/bad-value.csv"
refused 2 'line 2, field "n": "1.5" is not an int64' "a fraction for i64" -- \
	img "$watch_absent" --ngff --frame-meta "$tmp/bad-value.csv"
printf 'time:f64\ninf\n1e400\n' > "$tmp/too-big.csv"
refused 2 'line 3, field "time": "1e400" is not a float64' \
	"a float64 beyond the range (inf itself is taken)" -- \
	img "$watch_absent" --ngff --frame-meta "$tmp/too-big.csv"
refused 2 'frame metadata needs an image' "fields on a plain array" -- \
	img "$watch_absent" --frame-meta "$tmp/m.csv"
printf 'skipped:bool\n1\n' > "$tmp/skipped.csv"
refused 2 'the field the library adds' "a field named skipped" -- \
	img "$watch_absent" --ngff --frame-meta "$tmp/skipped.csv"
refused 1 'nope.csv: No such file' "a CSV that is not there" -- \
	img "$watch_absent" --ngff --frame-meta "$tmp/nope.csv"
refused 2 'not with --pad-partial' "--frame-meta --pad-partial" -- \
	img "$watch_absent" --ngff --frame-meta "$tmp/m.csv" --pad-partial

# --append (design §29): the first 4 frames and their lines, then the rest.
fb=$((8 * 6 * 2))
head -c $((4 * fb)) "$tmp/f.raw" > "$tmp/f1.raw"
tail -c +$((4 * fb + 1)) "$tmp/f.raw" > "$tmp/f2.raw"
head -5 "$tmp/m.csv" > "$tmp/m1.csv"
{ head -1 "$tmp/m.csv"; tail -n +6 "$tmp/m.csv"; } > "$tmp/m2.csv"
"$SP" write --shape 0,8,6 --chunk 2,4,3 --shard-shape 4,8,6 --dtype uint16 \
	--names t,y,x --input "$tmp/f1.raw" --quiet --ngff \
	--frame-meta "$tmp/m1.csv" "$tmp/p.zarr" 2> "$tmp/err"
ok $? "4 frames with their values" || diag "$(cat "$tmp/err")"
cp -a "$tmp/p.zarr" "$tmp/p4.zarr"
"$SP" write --append --input "$tmp/f2.raw" --quiet \
	--frame-meta "$tmp/m2.csv" "$tmp/p.zarr" 2> "$tmp/err"
ok $? "write --append --frame-meta: the 5 others" || diag "$(cat "$tmp/err")"
diff -r "$tmp/a.zarr" "$tmp/p.zarr" > "$tmp/diff" 2>&1
ok $? "continued: the one run's files, fields included" ||
	diag "$(head -5 "$tmp/diff")"

rm -rf "$tmp/p.zarr"
cp -a "$tmp/p4.zarr" "$tmp/p.zarr"
watch=$tmp/p.zarr
watch_absent=
refused 2 'has frame fields (time,z_um,n,flag): give --frame-meta' \
	"--append of an image with fields, no --frame-meta" -- \
	"$SP" write --append --input "$tmp/f2.raw" --quiet "$tmp/p.zarr"
sed '1s/n:i64/n:f64/' "$tmp/m2.csv" > "$tmp/m2-type.csv"
refused 2 'frame field "n": the store has dtype int64, the description float64' \
	"--append with a field of another dtype" -- \
	"$SP" write --append --input "$tmp/f2.raw" --quiet \
	--frame-meta "$tmp/m2-type.csv" "$tmp/p.zarr"
