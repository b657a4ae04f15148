# shellcheck shell=bash
# Ports for the scripts that start listeners (scripts/bench/*, loadgen/bench/stack_bench.sh,
# scripts/demo); sourced, not run. The rule: a script never assumes a port is free. It asks for
# port 0 where it can learn the bound port afterwards (`fraud-detector run --http-port 0
# --probe-port 0`, then service_port reads the port from the service's log line "API on
# http://ADDR:PORT"), and otherwise picks ports that are free now (free_port, free_port_base;
# a broker of scripts/kafka needs BASE..BASE+N-1 and BASE+100..: free_kafka_base). A port the
# user names is checked at once (require_free_ports): taken, the script stops and names it.
#
# A port picked free can still be taken before its listener binds it (a race, not a
# collision: the listener then fails and says which port; scripts/kafka checks again too).

# port_free PORT...: true when nothing listens on any PORT, on any local address.
# SO_REUSEADDR as the service and the broker set it: only a listener makes a port busy, not a
# connection of a stopped run in TIME_WAIT.
port_free() {
  python3 - "$@" <<'PY'
import socket, sys
for port in map(int, sys.argv[1:]):
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
    except OSError:
        sys.exit(1)
    finally:
        s.close()
PY
}

# free_port: prints a port that is free now: the one the kernel gives to a bind of port 0.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("0.0.0.0", 0)); print(s.getsockname()[1])'
}

# free_port_base OFFSET...: prints a port BASE such that BASE+OFFSET is free for every OFFSET
# (e.g. 0 1 2 100 101 102). BASE is drawn at random below the kernel's ephemeral range (so
# that the clients' own connections do not take the ports before the listeners bind them);
# each port is bound once to check it, without SO_REUSEADDR (a port in TIME_WAIT is skipped).
free_port_base() {
  python3 - "$@" <<'PY'
import random, socket, sys
offsets = [int(o) for o in sys.argv[1:]] or [0]
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
top = max(low, 12000) - 1 - max(offsets)
for _ in range(200):
    base = random.randint(10000, top)
    sockets = []
    try:
        for offset in offsets:
            s = socket.socket()
            sockets.append(s)
            s.bind(("0.0.0.0", base + offset))
    except OSError:
        continue
    finally:
        for s in sockets:
            s.close()
    print(base)
    sys.exit(0)
sys.exit("ports: found no base port with every port of +" + " +".join(map(str, offsets)) + " free")
PY
}

# kafka_ports BASE BROKERS: the ports `scripts/kafka start --port BASE --brokers BROKERS` binds.
kafka_ports() {
  local n
  for ((n = 0; n < $2; n++)); do echo $(($1 + n)) $(($1 + 100 + n)); done
}

# free_kafka_base [BROKERS]: prints a --port BASE for `scripts/kafka start` with every broker
# (BASE..) and controller (BASE+100..) port free; BROKERS defaults to 1.
free_kafka_base() {
  local n offsets=()
  for ((n = 0; n < ${1:-1}; n++)); do offsets+=("$n" $((100 + n))); done
  free_port_base "${offsets[@]}"
}

# require_free_ports PROG WHAT PORT...: exits 1 with a message naming the port and WHAT (the
# option that asked for it) unless every PORT is free. For ports the user gave.
require_free_ports() {
  local prog=$1 what=$2 port
  shift 2
  for port in "$@"; do
    if ! port_free "$port"; then
      echo "$prog: port $port ($what) is already in use on this host: give another, or leave" \
        "the option out and the script picks free ports" >&2
      exit 1
    fi
  done
}

# service_port LOG PID [API|probes] [FROM]: waits until `fraud-detector run` (process PID,
# logging to LOG) has said where its API (default) or probe listener is, and prints the port.
# FROM: the byte of LOG to read from (for a log that restarts append to; default 0). Fails with
# the log's tail when the process exits first (e.g. it could not bind a port it was given) or
# after 120 s. Reads text and JSON logs (--log-format); the line is logged at level info, so a
# FRAUD_LOG_LEVEL above info in the environment hides it (the bench scripts read other info
# lines too).
service_port() {
  local log=$1 pid=$2 which=${3:-API} from=${4:-0} port i
  for ((i = 0; i < 1200; i++)); do
    port=$(tail -c +"$((from + 1))" "$log" 2>/dev/null |
      sed -n "s|.*$which on https\{0,1\}://[^ ]*:\([0-9][0-9]*\) (.*|\1|p" | head -1)
    if [ -n "$port" ]; then
      echo "$port"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "ports: fraud-detector (pid $pid) exited before it listened; the end of $log:" >&2
      tail -n 20 "$log" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "ports: fraud-detector (pid $pid) logged no '$which on' line in 120 s ($log)" >&2
  return 1
}
