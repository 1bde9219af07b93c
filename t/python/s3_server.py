"""s3_server - a real S3-compatible server for the S3 tests: moto's server
(moto[server] from PyPI, scripts/setup-python-readers) on 127.0.0.1.

    s3_server.py ENVFILE [--ports A-B] [--timeout SECONDS] [--bucket B]...

Binds the first free port of the range, makes an IAM user whose key the
tests sign with, temporary credentials with a session token (a role the
user assumes), the buckets asked for, then turns authentication on:
from then on every request must carry a valid AWS Signature V4 (checked
by botocore's signer inside moto), so the tests check shardpipe's
signatures against an independent implementation.  Writes ENVFILE, shell
assignments the tests source (endpoint, region, credentials), and serves
until SIGTERM or the timeout, whichever comes first.
Exits 2 without ENVFILE when no port of the range is free.
"""

import argparse
import json
import os
import signal
import sys
import threading
import urllib.request

# moto reads its settings when imported: parts as small as the tests use
# (S3 itself wants 5 MiB but for the last part).
os.environ.setdefault("S3_UPLOAD_PART_MIN_SIZE", "1024")

from werkzeug.serving import make_server  # noqa: E402

from moto.moto_server.werkzeug_app import (  # noqa: E402
    DomainDispatcherApplication, MotoRequestHandler, create_backend_app)


def start(lo, hi):
    """moto's server on the first free port of lo..hi, serving on a
    thread of its own: (server, port), or (None, None).  The Python
    package's tests start theirs in-process with this."""
    app = DomainDispatcherApplication(create_backend_app)
    for port in range(lo, hi + 1):
        try:
            server = make_server("127.0.0.1", port, app, threaded=True,
                                 request_handler=MotoRequestHandler)
        except (OSError, SystemExit):
            # werkzeug exits, after a message, on a port in use.
            continue
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, port
    return None, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("envfile")
    ap.add_argument("--ports", default="47100-47199")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--bucket", action="append", default=[])
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.ports.split("-"))
    server, port = start(lo, hi)
    if server is None:
        print("s3_server: no free port in %s" % a.ports, file=sys.stderr)
        return 2
    endpoint = "http://127.0.0.1:%d" % port

    import boto3
    boot = dict(endpoint_url=endpoint, region_name="us-east-1",
                aws_access_key_id="bootstrap",
                aws_secret_access_key="bootstrap")
    iam = boto3.client("iam", **boot)
    iam.create_user(UserName="shardpipe-test")
    policy = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "*", "Resource": "*"}]})
    iam.put_user_policy(UserName="shardpipe-test", PolicyName="all",
                        PolicyDocument=policy)
    key = iam.create_access_key(UserName="shardpipe-test")["AccessKey"]
    # Temporary credentials with a session token, from a role the user
    # assumes: moto checks the token of every request made with them.
    trust = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "*"},
         "Action": "sts:AssumeRole"}]})
    role = iam.create_role(RoleName="shardpipe-test-role",
                           AssumeRolePolicyDocument=trust)["Role"]
    iam.put_role_policy(RoleName="shardpipe-test-role", PolicyName="all",
                        PolicyDocument=policy)
    sts = boto3.client("sts", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id=key["AccessKeyId"],
                       aws_secret_access_key=key["SecretAccessKey"])
    temp = sts.assume_role(RoleArn=role["Arn"],
                           RoleSessionName="shardpipe")["Credentials"]
    s3 = boto3.client("s3", **boot)
    for b in a.bucket:
        s3.create_bucket(Bucket=b)
    # From here on every request is authenticated.
    req = urllib.request.Request(endpoint + "/moto-api/reset-auth",
                                 data=b"0", method="POST",
                                 headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(req).read()

    tmp = a.envfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("SHARDPIPE_S3_ENDPOINT=%s\n" % endpoint)
        f.write("AWS_REGION=us-east-1\n")
        f.write("AWS_ACCESS_KEY_ID=%s\n" % key["AccessKeyId"])
        f.write("AWS_SECRET_ACCESS_KEY=%s\n" % key["SecretAccessKey"])
        f.write("S3_TEMP_KEY_ID=%s\n" % temp["AccessKeyId"])
        f.write("S3_TEMP_SECRET=%s\n" % temp["SecretAccessKey"])
        f.write("S3_TEMP_TOKEN=%s\n" % temp["SessionToken"])
        f.write("S3_PORT=%d\n" % port)
    os.rename(tmp, a.envfile)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait(a.timeout)
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
