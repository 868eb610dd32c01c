#!/usr/bin/env bash
# Three replicas of bin/pallasgw behind nginx, with redis-server as their
# shared session and quota store, all on 127.0.0.1 and all under one run
# directory (no root, nothing in /etc). `make replicas` runs it in the
# foreground; Ctrl-C, or `make replicas-stop` from another shell, stops
# everything. See docs/deployment.md, "Scaling out".
#
#   configs/replicas/replicas.sh        start, wait, stop on Ctrl-C/SIGTERM
#   configs/replicas/replicas.sh stop   stop a running set (from another shell)
#
# Environment (defaults in brackets):
#   PALLASGW_REPLICAS_PORT  nginx's port [8300]; the replicas listen on the next three
#   PALLASGW_REPLICA_PORTS  the replicas' three ports instead, e.g. "9001 9002 9003"
#   PALLASGW_REDIS_PORT     redis-server's port [8379]
#   RUN_DIR                 where the rendered nginx.conf, logs and pid files go [.run/replicas]
#   NGINX, REDIS_SERVER     the programs [nginx or /usr/sbin/nginx; redis-server]
#   PALLASGW_STATE_KEY      the replicas' shared state_key [a fresh random one]
#   PALLASGW_BIN            the gateway binary [bin/pallasgw]
set -euo pipefail

cd "$(dirname "$0")/../.."
root=$PWD
port=${PALLASGW_REPLICAS_PORT:-8300}
redis_port=${PALLASGW_REDIS_PORT:-8379}
run=${RUN_DIR:-$root/.run/replicas}
config=configs/replicas/pallasgw.yaml
read -r -a ports <<<"${PALLASGW_REPLICA_PORTS:-$((port + 1)) $((port + 2)) $((port + 3))}"
gw=${PALLASGW_BIN:-bin/pallasgw}

nginx=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
# nginx reads NGINX from its environment as the sockets of a binary
# upgrade; a path there makes it complain at each start.
unset NGINX
redis=${REDIS_SERVER:-$(command -v redis-server || echo /usr/bin/redis-server)}

# stop_all stops what the pid files name: the replicas first, all at once
# (SIGTERM: each drains for drain_delay, lets running calls finish and exits
# 0), then nginx (SIGQUIT: a graceful stop) and redis-server.
stop_all() {
	stop_group "$run"/replica-*.pid
	stop_group "$run"/nginx.pid
	stop_group "$run"/redis.pid
}

# stop_group signals every process of the pid files given, then waits for
# them (15 s at most, then SIGKILL).
stop_group() {
	local f pids=() pid
	for f in "$@"; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		rm -f "$f"
		case $f in
		*/nginx.pid) kill -QUIT "$pid" 2>/dev/null && pids+=("$pid") ;;
		*) kill -TERM "$pid" 2>/dev/null && pids+=("$pid") ;;
		esac
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 1 150); do
			kill -0 "$pid" 2>/dev/null || continue 2
			sleep 0.1
		done
		echo "replicas: pid $pid did not stop; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	done
}

# render writes $run/site.conf and $run/nginx.conf. The site is the shipped
# configs/nginx/pallasgw.conf rendered for this machine: listen on
# 127.0.0.1:$port instead of port 80, one upstream server per replica;
# everything else (the retries, keep-alive, SSE settings) is kept as shipped.
# test/docs checks the rendering against the shipped file.
render() {
	local servers="" p user=""
	for p in "${ports[@]}"; do
		servers+="    server 127.0.0.1:$p max_fails=0;\n"
	done
	sed -E \
		-e "s/^([[:space:]]*)listen[[:space:]]+80;/\1listen 127.0.0.1:$port;/" \
		-e '/^[[:space:]]*listen[[:space:]]+\[::\]:80;/d' \
		-e '/^[[:space:]]*#?[[:space:]]*server[[:space:]]+127\.0\.0\.1:82[0-9]{2}[[:space:]]+max_fails=0;/d' \
		-e "s/^(upstream pallasgw \{)$/\1\n$servers/" \
		-e 's/^([[:space:]]*)server_name .*/\1server_name _;/' \
		configs/nginx/pallasgw.conf >"$run/site.conf"
	if [ "$(id -u)" = 0 ]; then
		user="user root;" # nobody may not enter the run directory
	fi
	cat >"$run/nginx.conf" <<EOF
# Rendered by configs/replicas/replicas.sh; a top-level nginx.conf that needs no root.
$user
worker_processes 1;
pid $run/nginx.pid;
error_log $run/nginx-error.log notice;
events { worker_connections 1024; }
http {
    # Which replica served each request: \$upstream_addr (two when nginx retried).
    log_format replicas '\$time_local \$request_method \$uri \$status upstream=\$upstream_addr upstream_status=\$upstream_status \$request_time';
    access_log $run/access.log replicas;
    client_body_temp_path $run/client_body;
    proxy_temp_path $run/proxy;
    fastcgi_temp_path $run/fastcgi;
    uwsgi_temp_path $run/uwsgi;
    scgi_temp_path $run/scgi;
    include $run/site.conf;
}
EOF
}

case ${1:-} in
render) # render only: configs/replicas/replicas.sh render (into RUN_DIR)
	mkdir -p "$run"
	render
	exit 0
	;;
esac

if [ "${1:-}" = stop ]; then
	if [ -f "$run/replicas.pid" ] && kill -0 "$(cat "$run/replicas.pid")" 2>/dev/null; then
		# The foreground script stops everything itself, in order.
		kill -TERM "$(cat "$run/replicas.pid")"
		for _ in $(seq 1 300); do
			[ -f "$run/replicas.pid" ] || exit 0
			sleep 0.1
		done
		echo "replicas: the running set did not stop" >&2
		exit 1
	fi
	stop_all
	exit 0
fi

for p in "$nginx" "$redis" "$gw"; do
	if [ ! -x "$p" ]; then
		echo "replicas: $p not found (install nginx and redis-server; make build writes bin/pallasgw)" >&2
		exit 1
	fi
done
if [ -f "$run/replicas.pid" ] && kill -0 "$(cat "$run/replicas.pid")" 2>/dev/null; then
	echo "replicas: already running (pid $(cat "$run/replicas.pid")); make replicas-stop stops it" >&2
	exit 1
fi

mkdir -p "$run"
rm -f "$run"/*.log
echo $$ >"$run/replicas.pid"
trap 'stop_all; rm -f "$run/replicas.pid"; echo "replicas: stopped"' EXIT
trap 'exit 0' INT TERM

: "${PALLASGW_STATE_KEY:=$(head -c 32 /dev/urandom | base64)}"
export PALLASGW_STATE_KEY PALLASGW_REPLICAS_PORT=$port PALLASGW_REDIS_PORT=$redis_port

render

"$nginx" -t -q -p "$run" -e "$run/nginx-error.log" -c "$run/nginx.conf"

"$gw" validate --config "$config" >/dev/null

# Each program runs in a session of its own (setsid), so that Ctrl-C reaches
# this script alone and the stop goes in order.
setsid "$redis" --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
	--dir "$run" --logfile "$run/redis.log" &
echo $! >"$run/redis.pid"
for i in 0 1 2; do
	setsid "$gw" serve --config "$config" --listen "127.0.0.1:${ports[$i]}" \
		--log-format console 2>"$run/replica-$((i + 1)).log" &
	echo $! >"$run/replica-$((i + 1)).pid"
done
setsid "$nginx" -p "$run" -e "$run/nginx-error.log" -c "$run/nginx.conf" -g 'daemon off;' &
echo $! >"$run/nginx.pid" # nginx writes the same pid there, and removes the file when it exits

ready() { curl -fsS -o /dev/null --max-time 1 "$1" 2>/dev/null; }
for url in "${ports[@]/#/http://127.0.0.1:}" "http://127.0.0.1:$port"; do
	for _ in $(seq 1 100); do
		ready "$url/readyz" && continue 2
		sleep 0.1
	done
	echo "replicas: $url/readyz did not answer; see $run/*.log" >&2
	exit 1
done

cat <<EOF
replicas: 3 replicas (127.0.0.1:${ports[0]}, :${ports[1]}, :${ports[2]}) behind nginx on http://127.0.0.1:$port,
          redis-server on 127.0.0.1:$redis_port; logs and pid files in $run
try:      bin/pallasgw chat --url http://127.0.0.1:$port pipeline -m hello
          tail $run/access.log       # upstream= names the replica of each request
stop:     Ctrl-C here, or make replicas-stop
EOF

# Wait until told to stop, or until a process ends by itself (kill one
# replica to see nginx move its requests to the others: the set keeps
# running while nginx and redis do).
while kill -0 "$(cat "$run/nginx.pid")" 2>/dev/null && kill -0 "$(cat "$run/redis.pid")" 2>/dev/null; do
	sleep 1 &
	wait $! || true
done
echo "replicas: nginx or redis-server ended; stopping the rest" >&2
