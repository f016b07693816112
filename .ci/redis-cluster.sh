#!/usr/bin/env bash
# A 3-master Redis Cluster on loopback for the test suite (issue 14: queues on Redis Cluster).
# Idempotent: starts the nodes that are not answering (own dirs under $REDIS_CLUSTER_DIR), forms
# the cluster only if it is not formed yet, and waits for cluster_state:ok.
#   ports 7101 7102 7103, cluster bus ports +10000 (17101-17103); no replicas, no persistence.
# Usage: .ci/redis-cluster.sh [start|stop]   (stop shuts the nodes down and removes their state)
# A test that restarts masters starts its own cluster with REDIS_CLUSTER_PORTS="p1 p2 p3",
# REDIS_CLUSTER_DIR and REDIS_CLUSTER_APPENDONLY=yes|no, so the shared one is never disturbed.
set -euo pipefail

read -r -a PORTS <<<"${REDIS_CLUSTER_PORTS:-7101 7102 7103}"
DIR="${REDIS_CLUSTER_DIR:-/tmp/analytics-redis-cluster}"
APPENDONLY="${REDIS_CLUSTER_APPENDONLY:-no}"
HOST=127.0.0.1

log() { printf '== redis-cluster: %s\n' "$*"; }
answers() { redis-cli -h "$HOST" -p "$1" ping >/dev/null 2>&1; }

if [ "${1:-start}" = stop ]; then
  for p in "${PORTS[@]}"; do
    answers "$p" && redis-cli -h "$HOST" -p "$p" shutdown nosave >/dev/null 2>&1 || true
    # A node that did not take the SHUTDOWN (busy, half-started) goes by its pid file.
    if [ -f "$DIR/$p/redis.pid" ]; then kill "$(cat "$DIR/$p/redis.pid")" 2>/dev/null || true; fi
  done
  rm -rf "$DIR"
  exit 0
fi

command -v redis-server >/dev/null || { echo "redis-server is not installed (apt-get install redis-server)" >&2; exit 1; }

for p in "${PORTS[@]}"; do
  if answers "$p"; then continue; fi
  mkdir -p "$DIR/$p"
  log "starting node $p"
  # nodes.conf survives in $DIR/$p, so a restarted node rejoins the cluster it belonged to.
  redis-server --port "$p" --bind "$HOST" --daemonize yes \
    --cluster-enabled yes --cluster-config-file "$DIR/$p/nodes.conf" --cluster-node-timeout 3000 \
    --dir "$DIR/$p" --logfile "$DIR/$p/redis.log" --pidfile "$DIR/$p/redis.pid" \
    --save "" --appendonly "$APPENDONLY"
done
for p in "${PORTS[@]}"; do
  for _ in $(seq 1 50); do answers "$p" && break; sleep 0.1; done
  answers "$p" || { echo "redis node $p did not start (see $DIR/$p/redis.log)" >&2; exit 1; }
done

known=$(redis-cli -h "$HOST" -p "${PORTS[0]}" cluster info | tr -d '\r' | awk -F: '/^cluster_known_nodes/ {print $2}')
if [ "${known:-1}" -lt "${#PORTS[@]}" ]; then
  log "forming the cluster"
  redis-cli --cluster create $(for p in "${PORTS[@]}"; do printf '%s:%s ' "$HOST" "$p"; done) --cluster-replicas 0 --cluster-yes >/dev/null
fi

for _ in $(seq 1 100); do
  ok=1
  for p in "${PORTS[@]}"; do
    redis-cli -h "$HOST" -p "$p" cluster info | grep -q '^cluster_state:ok' || ok=0
  done
  [ "$ok" = 1 ] && { log "cluster_state:ok on ${PORTS[*]}"; exit 0; }
  sleep 0.2
done
echo "redis cluster did not reach cluster_state:ok" >&2
exit 1
