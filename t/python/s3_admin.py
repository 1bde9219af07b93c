"""s3_admin - what the S3 tests ask the server directly, through boto3
(not through shardpipe), with the endpoint and credentials of the
environment that t/python/s3_server.py wrote; the tests' own admin
scripts import its contents, files and compare:

    s3_admin.py uploads BUCKET        incomplete multipart uploads, one
                                      "KEY UPLOADID" a line
    s3_admin.py objects BUCKET PREFIX objects below PREFIX, one
                                      "KEY SIZE ETAG" a line
    s3_admin.py put BUCKET KEY=FILE...  each FILE becomes the object KEY
    s3_admin.py get BUCKET KEY        the object KEY on stdout
    s3_admin.py tree BUCKET PREFIX DIR  "same" when the objects below
                                      PREFIX/ are the files below DIR,
                                      names and bytes, else the first
                                      difference
    s3_admin.py zarr RAW URL...       zarr-python reads the array at each
                                      URL through its own S3 store
                                      (fsspec's s3fs) and compares it with
                                      the raw bytes of file RAW: one line
                                      a URL, "URL equal", or where the
                                      first difference is
"""

import os
import sys

import boto3


def client():
    return boto3.client(
        "s3", endpoint_url=os.environ["SHARDPIPE_S3_ENDPOINT"],
        region_name=os.environ.get("AWS_REGION", "us-east-1"))


def contents(s3, bucket, prefix):
    """{key below prefix: bytes} of every object below prefix."""
    out = {}
    for p in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                          Prefix=prefix):
        for o in p.get("Contents", []):
            body = s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
            out[o["Key"][len(prefix):]] = body
    return out


def files(top):
    """{path below top: bytes} of every file below the directory top."""
    out = {}
    for d, _, names in os.walk(top):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, top)] = f.read()
    return out


def compare(x, y, names):
    """"same" when the {key: bytes} x and y hold the same keys and bytes,
    else the first difference; names = (x's side, y's side)."""
    if sorted(x) != sorted(y):
        return "keys differ: only in %s: %s; only in %s: %s" % (
            names[0], sorted(set(x) - set(y)), names[1],
            sorted(set(y) - set(x)))
    for k in sorted(x):
        if x[k] != y[k]:
            n = min(len(x[k]), len(y[k]))
            at = next((i for i in range(n) if x[k][i] != y[k][i]), n)
            return "%s: %d and %d bytes, first difference at byte %d " \
                "(%s, %s)" % (k, len(x[k]), len(y[k]), at,
                              x[k][at] if at < len(x[k]) else "end",
                              y[k][at] if at < len(y[k]) else "end")
    return "same"


def zarr_equal(raw, urls):
    import numpy
    import zarr
    with open(raw, "rb") as f:
        want = f.read()
    opts = {"endpoint_url": os.environ["SHARDPIPE_S3_ENDPOINT"],
            "key": os.environ["AWS_ACCESS_KEY_ID"],
            "secret": os.environ["AWS_SECRET_ACCESS_KEY"],
            "client_kwargs": {"region_name": os.environ["AWS_REGION"]}}
    for url in urls:
        try:
            store = zarr.storage.FsspecStore.from_url(
                url, read_only=True, storage_options=opts)
            a = zarr.open_array(store, mode="r")
            got = numpy.ascontiguousarray(a[...]).tobytes()
        except Exception as e:  # noqa: BLE001 - reported, not raised
            print("%s error %s: %s" % (url, type(e).__name__, e))
            continue
        if got == want:
            print("%s equal" % url)
            continue
        n = min(len(got), len(want))
        at = next((i for i in range(n) if got[i] != want[i]), n)
        print("%s differ: %d bytes read, %d expected, first difference at "
              "byte %d" % (url, len(got), len(want), at))
    return 0


def main(argv):
    if argv[1] == "zarr":
        return zarr_equal(argv[2], argv[3:])
    s3 = client()
    cmd, bucket = argv[1], argv[2]
    if cmd == "uploads":
        r = s3.list_multipart_uploads(Bucket=bucket)
        for u in r.get("Uploads", []):
            print(u["Key"], u["UploadId"])
    elif cmd == "objects":
        pages = s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=argv[3])
        for p in pages:
            for o in p.get("Contents", []):
                print(o["Key"], o["Size"], o["ETag"])
    elif cmd == "put":
        for pair in argv[3:]:
            key, path = pair.split("=", 1)
            with open(path, "rb") as f:
                s3.put_object(Bucket=bucket, Key=key, Body=f.read())
    elif cmd == "get":
        sys.stdout.buffer.write(
            s3.get_object(Bucket=bucket, Key=argv[3])["Body"].read())
    elif cmd == "tree":
        print(compare(contents(s3, bucket, argv[3] + "/"), files(argv[4]),
                      ("s3://%s/%s" % (bucket, argv[3]), argv[4])))
    else:
        print("s3_admin: unknown command %s" % cmd, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception as e:  # noqa: BLE001 - one line for the test's log
        print("s3_admin: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
