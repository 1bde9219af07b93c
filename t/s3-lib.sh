# s3-lib.sh - sourced by t/s3-*.sh after t/lib.sh: a real S3-compatible
# server on 127.0.0.1 (moto's, t/python/s3_server.py) for the test, a
# fault-injecting proxy in front of it when asked, and their end when the
# test ends, however it ends.
#
#   s3_need              skip the whole test, with the reason, unless this
#                        build has S3 support and $SHARDPIPE_PYTHON imports
#                        moto and boto3 (scripts/setup-python-readers);
#                        $SHARDPIPE_S3_PYTHON, when set, is used instead
#                        (the sanitizer runs unset SHARDPIPE_PYTHON, whose
#                        interpreter cannot load an instrumented library;
#                        the S3 tests never load it into Python)
#   s3_start BUCKET...   start the server with those buckets and export
#                        its endpoint, region and credentials; a server
#                        that does not come up fails the test
#   s3_proxy NAME [--rule R]...
#                        start a proxy in front of the server; its port is
#                        in $proxy_port, its log in $tmp/NAME.log, its pid
#                        in $proxy_pid; a second call on the same NAME
#                        takes the same port again; S3_PROXY_PORTS is the
#                        range to bind in (default 47250-47299)
#   s3_admin ARGS...     t/python/s3_admin.py, talking to the server
#                        directly
s3_pids=

s3_cleanup() {
	for p in $s3_pids; do
		kill "$p" 2> /dev/null
	done
	rm -rf "$tmp"
}

s3_need() {
	need_shardpipe
	grep -q '^#define HAVE_S3 1' "${top_builddir:-.}/config.h" 2> /dev/null ||
		skip_all "this build has no S3 support (configure --with-s3; Debian: libcurl4-openssl-dev)"
	py=${SHARDPIPE_S3_PYTHON:-$SHARDPIPE_PYTHON}
	[ -n "$py" ] ||
		skip_all "SHARDPIPE_PYTHON is not set (run scripts/setup-python-readers and export SHARDPIPE_PYTHON=VENV/bin/python)"
	# The skip policy (doc/design.md §18.1): a Python named that does not
	# run is a failure; a venv made before the S3 tests, without moto,
	# is a skip that says so.
	"$py" -c 'import sys; sys.exit(sys.version_info < (3, 9))' \
		> /dev/null 2>&1 ||
		bail_out "$py cannot be run or is older than Python 3.9"
	for m in moto boto3 werkzeug; do
		"$py" -c "import $m" > /dev/null 2>&1 ||
			skip_all "$py cannot import $m: no S3 server to test against (scripts/setup-python-readers installs moto[server])"
	done
	export PYTHONDONTWRITEBYTECODE=1
	pyt=${top_srcdir:-.}/t/python
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardpipe-s3-XXXXXX")
	trap s3_cleanup EXIT
	trap 'exit 1' INT TERM
}

# wait_file FILE SECONDS PID: until FILE exists, while process PID lives;
# 1 when it never did.
wait_file() {
	_n=$(($2 * 10))
	while [ ! -s "$1" ] && [ "$_n" -gt 0 ] && kill -0 "$3" 2> /dev/null; do
		sleep 0.1
		_n=$((_n - 1))
	done
	[ -s "$1" ]
}

s3_start() {
	_args=
	for b in "$@"; do
		_args="$_args --bucket $b"
	done
	# shellcheck disable=SC2086
	"$py" "$pyt/s3_server.py" "$tmp/s3.env" --timeout 600 $_args \
		> "$tmp/server.log" 2>&1 < /dev/null &
	s3_pids="$s3_pids $!"
	if ! wait_file "$tmp/s3.env" 60 $!; then
		echo "1..1"
		echo "not ok 1 - the S3 server (moto) starts on 127.0.0.1 within 60 s"
		sed 's/^/# /' "$tmp/server.log"
		exit 1
	fi
	set -a
	. "$tmp/s3.env"
	set +a
	s3_endpoint=$SHARDPIPE_S3_ENDPOINT
	# Nothing from the user's own AWS setup may leak in, nor a proxy
	# that cannot reach 127.0.0.1.
	unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 \
		AWS_CA_BUNDLE http_proxy HTTP_PROXY https_proxy HTTPS_PROXY \
		all_proxy ALL_PROXY
	export AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_CONFIG_FILE=/dev/null
}

s3_proxy() {
	_name=$1
	shift
	# A test that starts a proxy again on its port (t/s3-faults.sh)
	# gives itself a range of its own (S3_PROXY_PORTS), so that another
	# test running beside it cannot take that port meanwhile.
	_ports=${S3_PROXY_PORTS:-47250-47299}
	[ -s "$tmp/$_name.port" ] && _ports="$(cat "$tmp/$_name.port")-$(cat "$tmp/$_name.port")"
	rm -f "$tmp/$_name.port.new"
	"$py" "$pyt/s3_proxy.py" "$tmp/$_name.port.new" "$s3_endpoint" \
		--ports "$_ports" --log "$tmp/$_name.log" "$@" \
		> "$tmp/$_name.out" 2>&1 < /dev/null &
	proxy_pid=$!
	s3_pids="$s3_pids $proxy_pid"
	if ! wait_file "$tmp/$_name.port.new" 30 "$proxy_pid"; then
		diag "the proxy did not start:"
		sed 's/^/#   /' "$tmp/$_name.out"
		exit 1
	fi
	mv "$tmp/$_name.port.new" "$tmp/$_name.port"
	proxy_port=$(cat "$tmp/$_name.port")
}

s3_admin() {
	"$py" "$pyt/s3_admin.py" "$@"
}

# rand_file N FILE: N bytes from the seed, quickly (Python's generator).
rand_file() {
	"$py" -c 'import random, sys
random.seed(int(sys.argv[1]))
sys.stdout.buffer.write(random.randbytes(int(sys.argv[2])))' "$seed" "$1" > "$2"
}
