"""readers_live - zarr-python 3 polling a store while `shardpipe write`
streams frames into it always opens a valid array whose shape covers only
complete shards, and reads the input's values there.

The writer is the CLI reading frames from a pipe that this script feeds
one at a time; between frames zarr-python opens the store afresh and
reads all of it.  The stream hands rows on in batches (226 rows of this
geometry), so enough frames are fed for two batches and their shards to
become visible before the end.  Checks: every poll valid (shape a multiple of the
shard's rows, values equal to the input, fill value where chunks are all
fill and left out), the writer exits 0, and the final array equals the
input.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sptap import (Tap, import_readers, require_shardpipe,  # noqa: E402
                   scratch_dir, test_seed)

np, ts, zarr = import_readers()
from spdata import compare, raw_bytes  # noqa: E402

FRAMES, D1, D2 = 480, 24, 20
SHARD_ROWS = 4


def main():
    tap = Tap()
    sp = require_shardpipe()
    rng = np.random.default_rng(test_seed())
    store = os.path.join(scratch_dir("readers-live"), "live.zarr")
    a = rng.integers(0, 4096, (FRAMES, D1, D2)).astype("<u2")
    a[8:16] = 9  # whole shards of fill: left out
    tap.plan(3)
    proc = subprocess.Popen(
        [sp, "write", "--shape", "0,%d,%d" % (D1, D2), "--chunk", "2,8,8",
         "--shard", "2,2,1", "--dtype", "uint16", "--fill-value", "9",
         "--threads", "1", store],
        stdin=subprocess.PIPE, stderr=subprocess.PIPE,
        env=dict(os.environ, SHARDPIPE_BACKEND="cpu"))
    polls, problems, shapes = 0, [], set()
    for t in range(FRAMES):
        proc.stdin.write(raw_bytes(a[t]))
        proc.stdin.flush()
        time.sleep(0.002)
        if t % 24 or not os.path.exists(os.path.join(store, "zarr.json")):
            continue
        try:
            z = zarr.open_array(store, mode="r")
            rows = z.shape[0]
            shapes.add(rows)
            polls += 1
            if rows % SHARD_ROWS:
                problems.append("poll %d: %d rows, not whole shards"
                                % (polls, rows))
            why = compare(z[...], a[:rows], "poll %d" % polls)
            if why:
                problems.append(why)
        except Exception as e:  # noqa: BLE001 - an invalid store
            problems.append("poll %d: %r" % (polls, e))
    proc.stdin.close()
    err = proc.stderr.read().decode("utf-8", "replace")
    rc = proc.wait()
    tap.ok(rc == 0, "shardpipe write streamed %d frames and exited 0"
           % FRAMES, err)
    tap.ok(polls > 0 and not problems,
           "%d polls by zarr-python while writing, every one valid and "
           "equal to the input (%d distinct shapes)" % (polls, len(shapes)),
           "\n".join(problems[:5]))
    tap.check("after the write: zarr-python reads the whole input",
              lambda: compare(zarr.open_array(store, mode="r")[...], a))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
