#!/usr/bin/env bash
# make demo: start the lab, plan and converge the cluster it describes
# (3 control planes + 2 workers), show its status and what the lab saw, then
# stop the lab. Usage: hack/demo.sh DIR PROVIDER. It runs talosc as a user
# would, setting no TALOSC_* variable.
set -euo pipefail
dir=${1:-bin/demo}
provider=${2:-openstack}
rm -f "$dir/.talosc-lab.json"
bin/talosc-lab up --provider "$provider" -C "$dir" --nodes-boot 200ms &
lab=$!
trap 'kill "$lab" 2>/dev/null; wait "$lab" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	[ -s "$dir/.talosc-lab.json" ] && break
	kill -0 "$lab" 2>/dev/null || { echo "demo: talosc-lab exited" >&2; exit 1; }
	sleep 0.1
done
[ -s "$dir/.talosc-lab.json" ] || { echo "demo: the lab did not come up" >&2; exit 1; }
# Nothing to export: the lab's cluster.yaml names its Image Factory and
# kubelet registry, and talosc's polls start short on their own.
run() { echo; echo "\$ $*"; "$@" || echo "(exit $?)"; }
run bin/kubectl-talosc plan -C "$dir"
run bin/kubectl-talosc converge -C "$dir"
run bin/kubectl-talosc plan -C "$dir"
run bin/kubectl-talosc status -C "$dir"
run bin/kubectl-talosc check -C "$dir"
run bin/kubectl-talosc plugin list -C "$dir"
run bin/talosc-lab status -C "$dir"
