#!/usr/bin/env bash
# swift-lab.sh up|down|env: Debian's real Swift (python3-swift, 2.30) on
# loopback only, for TestSwiftTargetAgainstRealSwift (pkg/provider/openstack).
#
# A proxy with tempauth (user test:tester, key testing; memcached, which
# tempauth needs, on the same address), and one object, container and
# account server on one plain directory device (mount_check = false), one
# replica. Everything listens on $SWIFT_LAB_IP (default 127.0.0.61) only;
# state, configuration, rings, logs and pid files live in $SWIFT_LAB_DIR
# (default /tmp/talosc-swift). Only library packages are installed
# (python3-swift, memcached with its service kept from starting), so no
# init script starts anything on another address.
#
#   hack/swift-lab.sh up     # installs what is missing, starts, waits for a token
#   eval "$(hack/swift-lab.sh env)"   # TALOSC_REAL_SWIFT=<auth url> user key
#   go test -run TestSwiftTargetAgainstRealSwift ./pkg/provider/openstack
#   hack/swift-lab.sh down   # stops the servers and removes $SWIFT_LAB_DIR
set -euo pipefail

DIR=${SWIFT_LAB_DIR:-/tmp/talosc-swift}
IP=${SWIFT_LAB_IP:-127.0.0.61}
PY=/usr/bin/python3 # a pyenv python3 first on PATH does not see Debian's dist-packages
PROXY=8080 OBJECT=6200 CONTAINER=6201 ACCOUNT=6202 MEMCACHED=11211
T0=$(date +%s)

log() { printf '[swift-lab %3ss] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }

case "$IP" in 127.*) ;; *)
	echo "swift-lab: SWIFT_LAB_IP=$IP is not a loopback address" >&2
	exit 2
	;;
esac

install() {
	local missing=""
	for p in python3-swift memcached; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
	done
	[ -z "$missing" ] && return
	log "installing:$missing"
	local policy=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		# keep memcached's maintainer script from starting the system service
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		policy=1
	fi
	apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >"$DIR/log/apt.log" 2>&1 ||
		{ [ "$policy" = 1 ] && rm -f /usr/sbin/policy-rc.d; tail -20 "$DIR/log/apt.log" >&2; exit 1; }
	[ "$policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
	log "packages installed"
}

# server NAME PORT APP: one storage server's configuration.
server_conf() {
	cat >"$DIR/etc/$1-server.conf" <<EOF
[DEFAULT]
bind_ip = $IP
bind_port = $2
workers = 0
user = $(id -un)
swift_dir = $DIR/etc
devices = $DIR/srv
mount_check = false
log_name = $1-server
log_udp_host = 127.0.0.1
log_udp_port = 9

[pipeline:main]
pipeline = $1-server

[app:$1-server]
use = egg:swift#$3
EOF
}

configure() {
	mkdir -p "$DIR"/{etc,srv/d1,run,log}
	cat >"$DIR/etc/swift.conf" <<EOF
[swift-hash]
swift_hash_path_suffix = talosc-swift-lab
swift_hash_path_prefix = talosc

[storage-policy:0]
name = Policy-0
default = yes
EOF
	cat >"$DIR/etc/proxy-server.conf" <<EOF
[DEFAULT]
bind_ip = $IP
bind_port = $PROXY
workers = 0
user = $(id -un)
swift_dir = $DIR/etc
log_name = proxy-server
log_udp_host = 127.0.0.1
log_udp_port = 9

[pipeline:main]
pipeline = catch_errors cache tempauth proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:cache]
use = egg:swift#memcache
memcache_servers = $IP:$MEMCACHED

[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = testing .admin http://$IP:$PROXY/v1/AUTH_test
EOF
	server_conf object "$OBJECT" object
	server_conf container "$CONTAINER" container
	server_conf account "$ACCOUNT" account
	# the three rings, one device each, in one Python start-up (the
	# swift package's swift-ring-builder is not installed)
	[ -e "$DIR/etc/object.ring.gz" ] || $PY - "$DIR/etc" "$IP" "$OBJECT" "$CONTAINER" "$ACCOUNT" <<'EOF' >"$DIR/log/ring.log" 2>&1
import sys
from swift.common.ring import RingBuilder
etc, ip, ports = sys.argv[1], sys.argv[2], sys.argv[3:]
for name, port in zip(("object", "container", "account"), ports):
    b = RingBuilder(4, 1, 1)
    b.add_dev({"id": 0, "region": 1, "zone": 1, "ip": ip, "port": int(port), "device": "d1", "weight": 100})
    b.rebalance()
    b.save(f"{etc}/{name}.builder")
    b.get_ring().save(f"{etc}/{name}.ring.gz")
EOF
}

# start NAME: runs a WSGI server from the library in the background.
start() {
	local pid="$DIR/run/$1.pid"
	[ -s "$pid" ] && kill -0 "$(cat "$pid")" 2>/dev/null && return
	# set_swift_dir first: run_wsgi validates swift.conf before it reads
	# the configuration's swift_dir
	nohup $PY -c 'import sys
from swift.common.utils import set_swift_dir
from swift.common.wsgi import run_wsgi
set_swift_dir(sys.argv[3])
sys.exit(run_wsgi(sys.argv[1], sys.argv[2], verbose=True))' "$DIR/etc/$1.conf" "$1" "$DIR/etc" >"$DIR/log/$1.log" 2>&1 &
	echo $! >"$pid"
}

up() {
	mkdir -p "$DIR/log"
	install
	configure
	local pid="$DIR/run/memcached.pid"
	if ! { [ -s "$pid" ] && kill -0 "$(cat "$pid")" 2>/dev/null; }; then
		memcached -l "$IP" -p "$MEMCACHED" -U 0 -u "$(id -un)" -m 16 >"$DIR/log/memcached.log" 2>&1 &
		echo $! >"$pid"
	fi
	for s in account-server container-server object-server proxy-server; do start "$s"; done
	for _ in $(seq 150); do
		if curl -fsS -o /dev/null -H 'X-Storage-User: test:tester' -H 'X-Storage-Pass: testing' "http://$IP:$PROXY/auth/v1.0" 2>/dev/null &&
			curl -fsS -o /dev/null "http://$IP:$PROXY/info" 2>/dev/null; then
			log "up: http://$IP:$PROXY/auth/v1.0 (test:tester / testing)"
			return
		fi
		kill -0 "$(cat "$DIR/run/proxy-server.pid")" 2>/dev/null || break
		sleep 0.2
	done
	log "Swift did not answer; the logs:"
	tail -n 20 "$DIR"/log/*.log >&2
	exit 1
}

down() {
	local p
	for p in "$DIR"/run/*.pid; do
		[ -s "$p" ] || continue
		kill "$(cat "$p")" 2>/dev/null || true
		rm -f "$p"
	done
	rm -rf "$DIR"
}

case "${1:-}" in
up) up ;;
down) down ;;
env) echo "export TALOSC_REAL_SWIFT='http://$IP:$PROXY/auth/v1.0 test:tester testing'" ;;
*)
	echo "usage: $0 up|down|env" >&2
	exit 2
	;;
esac
