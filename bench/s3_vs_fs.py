"""s3_vs_fs - the same `shardpipe bench` workload written to a directory
and to an S3 store on a local S3-compatible server, in the same run, and
the server's own intake measured with another client (boto3) for a bound.

    SHARDPIPE=build/shardpipe .venv-readers/bin/python bench/s3_vs_fs.py \
        [--rounds 3] [--rows 24] [--codecs none,zstd:1] [--dir /tmp]

Starts moto's server (t/python/s3_server.py, from the readers' venv that
scripts/setup-python-readers makes) on 127.0.0.1 and, per codec and per
round, in turn: boto3 putting the bytes the S3 run stored, in objects of
the mean shard size, as many at once as shardpipe's uploads
(SHARDPIPE_S3_UPLOADS, default 4); `shardpipe bench frames --output DIR`;
`shardpipe bench frames --output s3://bench/...`.  Prints the best of the
rounds for each and the ratios: S3 over the directory, S3 over the
server's boto3 intake.  Memory: pool_bytes and the peak resident memory
over it, as bench reports them.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "t", "python", "s3_server.py")


def start_server(tmp):
    envfile = os.path.join(tmp, "s3.env")
    proc = subprocess.Popen(
        [sys.executable, SERVER, envfile, "--bucket", "bench",
         "--ports", "47400-47499", "--timeout", "3600"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        if os.path.exists(envfile) or proc.poll() is not None:
            break
        time.sleep(0.1)
    if not os.path.exists(envfile):
        proc.kill()
        sys.exit("s3_vs_fs: moto's server did not start (is moto[server] "
                 "installed? scripts/setup-python-readers)")
    env = dict(os.environ)
    with open(envfile) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            env[k] = v
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        env.pop(k, None)
    return proc, env


def bench(sp, env, out, codec, rows):
    r = subprocess.run(
        [sp, "bench", "frames", "--rows", str(rows), "--codec", codec,
         "--output", out, "--overwrite", "--json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if r.returncode != 0:
        sys.exit("s3_vs_fs: %s\n%s" % (" ".join(r.args), r.stderr.decode()))
    return json.loads(r.stdout)


def boto3_intake(env, nbytes, nobjects, threads):
    import boto3
    s3 = boto3.client("s3", endpoint_url=env["SHARDPIPE_S3_ENDPOINT"],
                      region_name=env["AWS_REGION"],
                      aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    size = max(1, nbytes // nobjects)
    body = os.urandom(size)
    t0 = time.monotonic()
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(lambda i: s3.put_object(Bucket="bench",
                                            Key="bound/%d" % i, Body=body),
                    range(nobjects)))
    return size * nobjects / (time.monotonic() - t0) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=24)
    ap.add_argument("--codecs", default="none,zstd:1")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    a = ap.parse_args()
    sp = os.environ.get("SHARDPIPE", "shardpipe")
    uploads = int(os.environ.get("SHARDPIPE_S3_UPLOADS", "4"))
    tmp = tempfile.mkdtemp(prefix="shardpipe-s3bench-", dir=a.dir)
    proc, env = start_server(tmp)
    try:
        print("| codec | dir GB/s | S3 GB/s | S3 / dir | boto3 intake GB/s "
              "| S3 / boto3 | pool MiB: dir, S3 | RSS / pools: dir, S3 |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for codec in a.codecs.split(","):
            best = {}
            for _ in range(a.rounds):
                s3r = bench(sp, env, "s3://bench/run.zarr", codec, a.rows)
                bound = boto3_intake(env, s3r["bytes_out"], s3r["shards"],
                                     uploads)
                fsr = bench(sp, env, os.path.join(tmp, "run.zarr"), codec,
                            a.rows)
                for k, v in (("s3", s3r), ("fs", fsr)):
                    if k not in best or v["gbps"] > best[k]["gbps"]:
                        best[k] = v
                best["boto3"] = max(best.get("boto3", 0), bound)
            fs, s3 = best["fs"], best["s3"]
            print("| %s | %.3f | %.3f | %.2f | %.3f | %.2f | %.0f, %.0f "
                  "| %.2f, %.2f |" % (
                      codec, fs["gbps"], s3["gbps"], s3["gbps"] / fs["gbps"],
                      best["boto3"], s3["gbps"] / best["boto3"],
                      fs["pool_bytes"] / 2**20, s3["pool_bytes"] / 2**20,
                      fs["rss_over_pools"], s3["rss_over_pools"]))
            sys.stdout.flush()
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
